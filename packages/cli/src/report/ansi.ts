// The few terminal colours the summary uses; identity functions when colour is off, so callers
// never branch on it.

export interface Paint {
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  blue(text: string): string;
  magenta(text: string): string;
}

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

export function paint(color: boolean): Paint {
  if (!color) {
    const same = (text: string) => text;
    return { bold: same, dim: same, red: same, green: same, yellow: same, blue: same, magenta: same };
  }
  return {
    bold: sgr(1, 22),
    dim: sgr(2, 22),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    blue: sgr(34, 39),
    magenta: sgr(35, 39),
  };
}
