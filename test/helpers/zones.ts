import { now } from '../../src/domain/core/clock.ts';

/** A fixed-offset zone (Etc/GMT±n) whose wall clock reads `hour` o'clock now, by the service's clock. */
export function zoneAt(hour: number): string {
  let offset = (hour - now().getUTCHours() + 24) % 24;
  if (offset > 14) offset -= 24;
  return offset === 0 ? 'Etc/GMT' : offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}
