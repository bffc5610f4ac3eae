// Older harbor tasks write sizes the docker-compose way (`memory = "2G"`); berth's spec wants whole
// mebibytes. Units are binary, as Docker reads them: "2G" is 2048 MiB, "512M" is 512 MiB.

const UNIT_MB: Record<string, number> = {
  k: 1 / 1024,
  m: 1,
  g: 1024,
  t: 1024 * 1024,
};

/**
 * "2G", "2g", "2GB", "2Gi", "512M", "1.5G" -> MiB, rounded up to a whole MiB (a limit is never
 * silently lowered). Returns undefined for anything else, so the caller can name the field.
 * A bare number is refused on purpose: Docker reads it as bytes, a human often means megabytes.
 */
export function parseSizeToMb(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt])(?:ib|i|b)?\s*$/i.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]);
  const perUnit = UNIT_MB[match[2]!.toLowerCase()];
  if (!Number.isFinite(value) || value <= 0 || perUnit === undefined) return undefined;
  return Math.ceil(value * perUnit);
}
