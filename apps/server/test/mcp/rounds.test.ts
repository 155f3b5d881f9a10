import { describe, expect, it } from "vitest";
import { answeredRound, roundState } from "../../src/mcp/rounds.ts";

describe("input_required round states", () => {
  it("wrap the upstream's requestState with the round's call and give it back unchanged", () => {
    for (const upstreamState of ["opaque.state.with.dots", "", "toolplane.round.tcl_x.inner"]) {
      expect(answeredRound(roundState("tcl_01abc", upstreamState))).toEqual({ callId: "tcl_01abc", upstreamState });
    }
  });

  it("name the round when the upstream sent no state, and send none back", () => {
    expect(answeredRound(roundState("tcl_01abc", undefined))).toEqual({
      callId: "tcl_01abc",
      upstreamState: undefined,
    });
  });

  it("leave states that are not the gateway's alone", () => {
    for (const state of [
      undefined,
      42,
      "client-state",
      "toolplane.continuation.abc",
      "toolplane.round.",
      "toolplane.round..x",
    ]) {
      expect(answeredRound(state)).toBeUndefined();
    }
  });
});
