import type { routesReport } from '../domain/operator/routes-report.ts';

type Report = Awaited<ReturnType<typeof routesReport>>;

/** `posthorn admin routes`: each route on a line with its health and traffic, then its processes, then the rules. */
export function formatRoutesReport(report: Report): string {
  const lines = [
    report.file ? `Routes of ${report.file} (POSTHORN_ROUTES):` : 'One route (no POSTHORN_ROUTES):',
  ];
  for (const route of report.routes) {
    const limits = [
      route.rate_per_second === null ? null : `${route.rate_per_second}/s`,
      route.rate_per_hour === null ? null : `${route.rate_per_hour}/h`,
    ].filter(Boolean);
    const state = route.nodes.length === 0 ? 'no traffic yet' : route.healthy ? 'healthy' : 'UNHEALTHY';
    lines.push(
      `  ${route.name}  ${route.type} ${route.target}${limits.length ? `  rate ${limits.join(', ')}` : ''}${route.tags && route.tags !== 'none' ? `  tags ${route.tags}` : ''}  ${state}  taken ${route.taken}, not taken ${route.not_taken}`,
    );
    for (const node of route.nodes)
      lines.push(
        `      ${node.node}: ${node.healthy ? 'healthy' : 'unhealthy'}, taken ${node.taken}, not taken ${node.not_taken}, ambiguous ${node.ambiguous}${node.last_error ? `, last error: ${node.last_error}` : ''} (as of ${node.updated_at})`,
      );
  }
  lines.push('Rules, in order (the first that fits decides):');
  report.rules.forEach((rule, i) => {
    const match = Object.entries(rule.match).map(([k, v]) => `${k}=${v}`);
    lines.push(
      `  ${i + 1}. ${match.length ? match.join(' ') : 'every message'} -> ${rule.routes.join(', ')}`,
    );
  });
  return lines.join('\n');
}
