import {
  Background,
  Controls,
  type Edge,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useMemo } from 'react';
import type { FlowStep, FlowStepStats, FlowTrigger } from '../../api/flows.ts';
import { formatNumber } from '../../components/format.ts';
import { edgesOf, layout, STEP_LABELS, summaryOf, TRIGGER_LABELS } from './flow-model.ts';

/**
 * The flow as a graph (React Flow): the trigger, then each step with its per-step counts, and an
 * arrow for each path (labelled for branches and waits for an event). The graph shows and selects;
 * each node is a button that opens the step in the editor beside it. Positions come from the flow's
 * shape (flow-model.ts `layout`), so nothing is dragged and nothing is lost on save.
 */

type StepData = {
  kind: string;
  title: string;
  summary: string;
  stats?: FlowStepStats;
  selected: boolean;
  faulty: boolean;
  onSelect(): void;
};

function StepNode({ data }: NodeProps<Node<StepData>>) {
  const s = data.stats;
  return (
    <div className={`flow-node${data.selected ? ' selected' : ''}${data.faulty ? ' faulty' : ''}`}>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <button
        type="button"
        className="flow-node-button nodrag"
        onClick={data.onSelect}
        aria-pressed={data.selected}
      >
        <span className="flow-node-kind">{data.kind}</span>
        <span className="flow-node-title">{data.title}</span>
        <span className="flow-node-summary">{data.summary}</span>
        {s && (
          <span className="flow-node-stats">
            {formatNumber(s.entered)} entered
            {s.type === 'send' ? ` · ${formatNumber(s.sent)} sent · ${formatNumber(s.opened)} opened` : ''}
            {s.exited > 0 ? ` · ${formatNumber(s.exited)} left` : ''}
          </span>
        )}
        {data.faulty && <span className="flow-node-fault">Needs attention</span>}
      </button>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </div>
  );
}

const nodeTypes = { step: StepNode };

function triggerSummary(t: FlowTrigger): string {
  switch (t.type) {
    case 'event':
      return t.event ? `“${t.event}”` : '(no event yet)';
    case 'contact_updated':
      return t.condition ? 'when it matches a condition' : 'any change';
    default:
      return 'subscribed contacts enter';
  }
}

export interface FlowGraphProps {
  trigger: FlowTrigger;
  steps: FlowStep[];
  stats?: FlowStepStats[];
  selected: string;
  faulty: Set<string>;
  onSelect(id: string): void;
}

export function FlowGraph({ trigger, steps, stats, selected, faulty, onSelect }: FlowGraphProps) {
  const { nodes, edges } = useMemo(() => {
    const placed = layout(steps);
    const at = new Map(placed.steps.map((p) => [p.id, p]));
    const statsOf = new Map((stats ?? []).map((s) => [s.id, s]));
    const nodes: Node<StepData>[] = [
      {
        id: 'trigger',
        type: 'step',
        position: { x: placed.trigger.x, y: placed.trigger.y },
        data: {
          kind: 'Trigger',
          title: TRIGGER_LABELS[trigger.type],
          summary: triggerSummary(trigger),
          selected: selected === 'trigger',
          faulty: faulty.has('trigger'),
          onSelect: () => onSelect('trigger'),
        },
      },
      ...steps.map((s) => ({
        id: s.id,
        type: 'step',
        position: { x: at.get(s.id)?.x ?? 0, y: at.get(s.id)?.y ?? 0 },
        data: {
          kind: STEP_LABELS[s.type],
          title: s.id,
          summary: summaryOf(s),
          stats: statsOf.get(s.id),
          selected: selected === s.id,
          faulty: faulty.has(s.id),
          onSelect: () => onSelect(s.id),
        },
      })),
    ];
    const arrow = { type: MarkerType.ArrowClosed, width: 18, height: 18 };
    const edges: Edge[] = [];
    if (steps[0]) edges.push({ id: 'trigger>', source: 'trigger', target: steps[0].id, markerEnd: arrow });
    for (const s of steps)
      for (const e of edgesOf(s))
        if (e.target !== null && at.has(e.target))
          edges.push({
            id: `${s.id}>${e.key}`,
            source: s.id,
            target: e.target,
            label: e.label || undefined,
            markerEnd: arrow,
            type: 'smoothstep',
          });
    return { nodes, edges };
  }, [trigger, steps, stats, selected, faulty, onSelect]);

  return (
    <section className="flow-graph" aria-label="The flow as a graph">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        nodesDraggable={false}
        nodesConnectable={false}
        nodesFocusable={false}
        edgesFocusable={false}
        elementsSelectable={false}
        // a click anywhere on a node selects it (and lets nodes take pointer events at all)
        onNodeClick={(_, node) => onSelect(node.id)}
        fitView
        fitViewOptions={{ padding: 0.15, maxZoom: 1 }}
        minZoom={0.3}
        preventScrolling={false}
        zoomOnScroll={false}
      >
        <Background gap={24} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </section>
  );
}
