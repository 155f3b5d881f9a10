import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Express } from "express";

/** An app listening on 127.0.0.1 (a free port): its base URL, and a close that ends kept-alive connections too. */
export async function listenOnLoopback(app: Express): Promise<{ base: string; close(): Promise<void> }> {
  const http: Server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => http.once("listening", () => resolve()));
  return {
    base: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
