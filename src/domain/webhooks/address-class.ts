/**
 * The address classes webhooks are judged by live with the other building blocks, in
 * delivery/address-class.ts: direct delivery and MTA-STS fetches use the same guard (issue 47).
 */
export * from '../../delivery/address-class.ts';
