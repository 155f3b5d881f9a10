/** What every handler knows about the request: whose it is. */
export interface RequestContext {
  instanceId: string;
  requestId: string;
}
