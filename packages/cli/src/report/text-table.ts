/**
 * One line of an aligned block: a label, a number (right-aligned in its column) and an optional
 * note. Colour is applied after padding, so escape codes never skew the columns.
 */
export interface TextRow {
  label: string;
  value: string;
  note?: string;
  /** Colours the value (and nothing else). */
  paintValue?: (text: string) => string;
}

export function alignRows(rows: readonly TextRow[], indent = '  '): string[] {
  const labelWidth = Math.max(0, ...rows.map((r) => r.label.length));
  const valueWidth = Math.max(0, ...rows.map((r) => r.value.length));
  return rows.map((row) => {
    const value = row.value.padStart(valueWidth);
    const painted = row.paintValue ? row.paintValue(value) : value;
    const line = `${indent}${row.label.padEnd(labelWidth)}  ${painted}`;
    return row.note ? `${line}   ${row.note}` : line;
  });
}
