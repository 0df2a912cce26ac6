/** What the project's plan includes, feature by feature (GET /v1/limits `features`). */
export function PlanFeatures({ features }: { features: Record<string, boolean> }) {
  const list = Object.entries(features);
  if (list.length === 0) return null;
  return (
    <>
      <h3>Features</h3>
      <ul className="features">
        {list.map(([name, on]) => (
          <li key={name} className={on ? undefined : 'muted'}>
            {name.replaceAll('_', ' ')}: {on ? 'included' : 'not included'}
          </li>
        ))}
      </ul>
    </>
  );
}
