// The result model, the console table and the Markdown table.

/** `reference`: measured for comparison, with no target of its own (figure 4's floor). */
export type Status = "pass" | "miss" | "not measured" | "invalid" | "pending" | "reference";

export interface FigureResult {
  /** "1 PGlite", "6 no-op generate", … */
  id: string;
  title: string;
  /** The measured values side by side, with units. */
  measured: string;
  /** The compared number: a ratio, seconds or MB; null when not measured. */
  value: number | null;
  display: string;
  target: string;
  status: Status;
  note?: string;
  data?: unknown;
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  postgres: string | null;
  pglite: string;
  loadAverageAtStart: number[];
}

export interface BenchResult {
  startedAt: string;
  seconds: number;
  machine: Machine;
  settings: Record<string, unknown>;
  /** Other work on a shared machine shows here: the figures are ratios so that it matters less. */
  loadAverageAtEnd: number[];
  figures: FigureResult[];
}

export function check(value: number, op: "<=" | ">=", target: number): "pass" | "miss" {
  return (op === "<=" ? value <= target : value >= target) ? "pass" : "miss";
}

export const fmt = {
  int: (n: number) => Math.round(n).toLocaleString("en-US"),
  ms: (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms`,
  /** A difference in ms, with its sign: "+1.20 ms", "−0.74 ms". */
  addedMs: (n: number) => `${n < 0 ? "−" : "+"}${fmt.ms(Math.abs(n))}`,
  s: (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(1)} s`,
  ratio: (n: number) => `${n.toFixed(2)}×`,
};

const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");

export function machineLine(m: Machine, loadAtEnd?: number[]): string {
  return (
    `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}; PostgreSQL ${m.postgres ?? "n/a"}, ` +
    `PGlite ${m.pglite}; load average ${loads(m.loadAverageAtStart)} at start` +
    (loadAtEnd ? `, ${loads(loadAtEnd)} at end` : "")
  );
}

const HEAD = ["Figure", "What", "Measured", "Ratio / value", "Target", "Result"];
const cells = (f: FigureResult) => [f.id, f.title, f.measured, f.display, f.target, f.status.toUpperCase()];

export function consoleTable(result: BenchResult): string {
  const rows = [HEAD, ...result.figures.map(cells)];
  const widths = HEAD.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" │ ");
  const rule = widths.map((w) => "─".repeat(w)).join("─┼─");
  const notes = result.figures.filter((f) => f.note).map((f) => `  ${f.id}: ${f.note}`);
  return [
    `Machine: ${machineLine(result.machine, result.loadAverageAtEnd)}`,
    "",
    line(HEAD),
    rule,
    ...rows.slice(1).map(line),
    ...(notes.length ? ["", "Notes:", ...notes] : []),
  ].join("\n");
}

const figureOf = (line: string) => Number.parseInt(line.replace(/^[|-] /, ""), 10);

/**
 * The block between BENCHMARKS.md's markers. A run of some figures (`--only`) keeps the rows, notes and run lines
 * of the figures it did not measure from the `previous` block, so a partial run replaces only its own rows.
 */
export function markdownTable(result: BenchResult, only?: number[], previous = ""): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  const others = (line: string) => only !== undefined && !only.includes(figureOf(line));
  const old = previous.split("\n");
  const notes = [
    ...old.filter((l) => l.startsWith("- ") && others(l)),
    // A note may quote a response body: one line each, or the list (and the merge above) breaks.
    ...result.figures.filter((f) => f.note).map((f) => `- ${f.id}: ${f.note?.replace(/\s+/g, " ")}`),
  ];
  const rows = [
    ...old.filter((l) => /^\| \d/.test(l) && others(l)),
    ...result.figures.map((f) => {
      const c = cells(f);
      c[5] = f.status === "pass" ? "pass" : f.status === "miss" ? "**miss**" : f.status;
      return `| ${c.map(esc).join(" | ")} |`;
    }),
  ].sort((a, b) => figureOf(a) - figureOf(b));
  // A run line names its figures when the run was partial; one whose figures were all measured again goes.
  const runLine = (l: string) => /^(Measured|Figures?) /.test(l);
  const stillShown = (l: string) =>
    l.startsWith("Measured ") ||
    (/^Figures? ([\d, ]+) measured/.exec(l)?.[1] ?? "")
      .split(", ")
      .map(Number)
      .some((n) => others(`| ${n}`));
  const machine = `in ${Math.round(result.seconds)} s on: ${machineLine(result.machine, result.loadAverageAtEnd)}.`;
  const lines = only
    ? [
        ...old.filter((l) => runLine(l) && stillShown(l)),
        `Figure${only.length > 1 ? "s" : ""} ${only.join(", ")} measured ${result.startedAt} ${machine}`,
      ]
    : [`Measured ${result.startedAt} ${machine}`];
  return [
    lines.join("\n\n"),
    "",
    `| ${HEAD.join(" | ")} |`,
    `| ${HEAD.map(() => "---").join(" | ")} |`,
    ...rows,
    ...(notes.length ? ["", ...notes] : []),
  ].join("\n");
}
