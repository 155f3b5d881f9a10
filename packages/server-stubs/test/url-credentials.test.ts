import { describe, expect, it } from "vitest";
import { credentialsInUrl, maskUrlCredentials } from "../src/url-credentials.ts";

describe("credentials in URLs", () => {
  it("finds userinfo and secret query parameters, whatever their case or separator", () => {
    expect(credentialsInUrl("https://u:p@h/x")).toBe("userinfo");
    expect(credentialsInUrl("https://u@h/x")).toBe("userinfo");
    expect(credentialsInUrl("https://h/x?API-KEY=1")).toBe("API-KEY");
    expect(credentialsInUrl("https://h/x?a=1&Client_Secret=2")).toBe("Client_Secret");
    expect(credentialsInUrl("https://h/x?region=eu&keys=2&monkey=3")).toBeUndefined();
    expect(credentialsInUrl("not a url")).toBeUndefined();
  });

  it("masks every URL quoted in a text, leaving the rest as it is", () => {
    expect(maskUrlCredentials("a postgres://app:pw@db:5432/x and https://h/?token=t&n=1 b")).toBe(
      "a postgres://[redacted]@db:5432/x and https://h/?token=[redacted]&n=1 b",
    );
    expect(maskUrlCredentials("/oauth/callback?code=abc&state=s", ["code", "state"])).toBe(
      "/oauth/callback?code=[redacted]&state=[redacted]",
    );
    expect(maskUrlCredentials("mail me at a@b.example")).toBe("mail me at a@b.example");
  });
});
