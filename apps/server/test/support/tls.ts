import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "undici";

/**
 * HTTPS on 127.0.0.1 for tests that need an `https:` origin (a Client ID Metadata Document URL must be one): a
 * fresh self-signed certificate made by openssl, and a fetch that trusts exactly it.
 */

export interface Certificate {
  key: string;
  cert: string;
}

export function selfSignedCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-tls-"));
  try {
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: "ignore" },
    );
    return { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A fetch whose TLS connections trust `cert` as their only CA (plain http is unaffected): Node's own fetch with an
 * undici dispatcher of the version Node bundles.
 */
export function trustingFetch(cert: string): typeof fetch {
  const dispatcher = new Agent({ connect: { ca: cert } });
  return (input, init) => fetch(input, { ...init, dispatcher } as RequestInit);
}
