// What the dashboard's scripts use of mediahook's shared page text (page-text.ts in mediahook's
// web module), which the page runs before them.

/** A new element, its text set as text (never parsed as markup). */
declare function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  className?: string,
): HTMLElementTagNameMap[K];
/** The text as nodes, each invisible character a marked escape. */
declare function shown(value: unknown): DocumentFragment;
/** The text with its invisible characters escaped, for an attribute. */
declare function visible(value: unknown): string;
/** A value as text: whole when short, else its first lines and a button to see it all. */
declare function clamped(value: unknown, key: string): Node;
/** A time in UTC, the clock alone when it is today. */
declare function utc(iso: string, milliseconds?: boolean, zone?: boolean): HTMLElement;
/** Names each cell of a row by its column, for a table that stacks on a narrow screen. */
declare function labelCells(row: HTMLTableRowElement): void;
