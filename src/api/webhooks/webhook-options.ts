// How the service sends webhooks (docs/api.md "Webhooks"), from svc-api's flags.
export interface WebhookDelivery {
  /**
   * Deliveries may go to private, loopback and link-local addresses (svc-api --webhook-allow-private): for a service
   * whose users' receivers are on its own network, and for tests. Off, such an address is refused where it is
   * connected to, so neither a name resolving to it nor a redirect reaches the metadata service or the metrics port.
   */
  allowPrivate: boolean;
  /** PEM certificates trusted besides the system's (svc-api --webhook-ca-file): receivers behind a private CA. */
  ca?: string;
}
