import type { DomainContext } from '../core/context.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import type { GateSender } from '../reputation/gate.ts';
import { type GateOverride, passGate } from '../reputation/gate-pass.ts';
import type { FlowDefinition } from './definition.ts';

/** Each sender of a flow's send steps once (a settled definition: every step's `from` known). */
export function flowSenders(projectId: string, def: FlowDefinition): GateSender[] {
  const senders = new Map<string, GateSender>();
  for (const step of def.steps)
    if (step.type === 'send' && step.from && !senders.has(step.from.toLowerCase()))
      senders.set(step.from.toLowerCase(), {
        projectId,
        stream: 'automation',
        from: { name: step.from_name ?? '', address: step.from },
      });
  return [...senders.values()];
}

/** The bulk-sender gate before a flow runs, for each address its steps send from (gate-pass.ts). */
export async function passFlowGate(
  ctx: DomainContext,
  facts: ProjectFacts,
  def: FlowDefinition,
  flow: { id: string; name: string },
  override?: GateOverride,
) {
  await passGate(
    ctx,
    facts.id,
    flowSenders(facts.id, def),
    { scope: 'flow', id: flow.id, refusal: `Flow "${flow.name}" cannot be activated` },
    override,
  );
}
