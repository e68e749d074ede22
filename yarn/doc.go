// Package yarn is Sluice's client of Apache Hadoop YARN, speaking YARN's own
// protocols over Hadoop IPC (no Java):
//
//   - Client: ApplicationClientProtocol (ResourceManager), used by the
//     Sluice CLI to submit, watch and kill applications and read cluster
//     state, with ResourceManager HA failover.
//   - AMClient: ApplicationMasterProtocol (ResourceManager scheduler), used
//     by the Sluice ApplicationMaster to register, heartbeat for containers
//     and finish, authenticated with the AMRMToken.
//   - NMClient: ContainerManagementProtocol (NodeManagers), used by the AM to
//     start and stop TaskManager containers, authenticated with NMTokens.
//
// Remote exceptions are *hadoop.RemoteError values; match the ones Sluice
// acts on with errors.Is and the ExceptionClass constants here
// (ErrApplicationNotFound, ErrInvalidResourceRequest, ...) and in package
// hadoop (hadoop.ErrStandby, hadoop.ErrAccessControl, ...).
//
// Kerberos: the IPC layer (internal/ipc) authenticates with SASL GSSAPI
// given a login (package security/kerberos) in ipc.Options.Kerberos and the
// server principal in ipc.Endpoint.ServerPrincipal (ClientConfig.Kerberos,
// ServerPrincipal; ConfigureKerberos), and token connections (AMRMToken,
// NMTokens) with DIGEST-MD5; both negotiate hadoop.rpc.protection
// (ClientConfig.QOP, AMClientConfig.QOP, NMClientConfig.QOP). Servers that
// require Kerberos from a client without a login are refused with
// ipc.ErrKerberosNotConfigured; servers that ask a client with a login to
// fall back to SIMPLE are refused with ErrFallbackToSimple unless
// ipc.client.fallback-to-simple-auth-allowed (ClientConfig and
// delegation.Config FallbackToSimpleAllowed).
package yarn
