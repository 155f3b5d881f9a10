import { afterAll, beforeAll } from "vitest";
import { startTestServer, type TestServerOptions } from "./server.ts";

/**
 * A value made once per test file in beforeAll (and disposed of in afterAll), usable from the file's top level
 * as if it already existed: the returned object forwards to the value, and reading it before beforeAll has run
 * throws. Fixtures are made in the order they are declared, so one can use another.
 */
export function fixture<T extends object>(make: () => Promise<T>, dispose?: (value: T) => Promise<void>): T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await make();
  });
  if (dispose) {
    afterAll(async () => {
      if (value) await dispose(value);
    });
  }
  const current = () => {
    if (value === undefined) throw new Error("a fixture was read before beforeAll made it");
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(current(), key),
    has: (_, key) => Reflect.has(current(), key),
    ownKeys: () => Reflect.ownKeys(current()),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(current(), key),
  });
}

/** A test server for the whole file (startTestServer in beforeAll, closed in afterAll). */
export const useTestServer = (options?: TestServerOptions) =>
  fixture(
    () => startTestServer(options),
    (server) => server.close(),
  );
