/**
 * The record writes of tool calls whose MCP clients were answered before their records were written (see
 * Gateway.call), until they are done. Readers of records in this process wait for them (`written`), so a client
 * that has its answer finds its call through this process's API; shutdown waits for them before the database
 * closes.
 */
class AnsweredRecords {
  private readonly unwritten = new Set<Promise<void>>();

  /** Tracks `write` (which never rejects) until it is done. */
  writing(write: Promise<void>): void {
    this.unwritten.add(write);
    void write.finally(() => this.unwritten.delete(write));
  }

  /** Resolves once the records of the calls answered so far are written (or failed to be). */
  async written(): Promise<void> {
    if (this.unwritten.size > 0) await Promise.all(this.unwritten);
  }
}

export const answeredRecords = new AnsweredRecords();
