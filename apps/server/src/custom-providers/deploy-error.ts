/** A deployment failure that is not a probe step: the code and message end up on the version's deployment. */
export class DeployError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "DeployError";
  }
}
