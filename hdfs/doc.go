// Package hdfs is Sluice's HDFS filesystem: an fs.FileSystem over
// github.com/colinmarc/hdfs/v2, configured from the Hadoop configuration
// (package hadoop: fs.defaultFS, HA nameservices, HADOOP_USER_NAME), and
// registered with an fs.Resolver for hdfs:// URIs:
//
//	conf, err := hadoop.LoadFromEnvironment(os.Getenv)
//	r := fs.NewResolver()
//	defer r.Close()
//	err = hdfs.Register(r, hdfs.Config{Hadoop: conf, Getenv: os.Getenv})
//	fsys, p, err := r.For("hdfs:///sluice/checkpoints")
//
// Errors name their path and match fs.ErrNotExist, fs.ErrExist and
// fs.ErrPermission; other exceptions raised by the NameNode become
// *hadoop.RemoteError, so errors.Is(err, hadoop.ErrStandby) and the like
// work as for the YARN client.
//
// Authentication is SIMPLE, or Kerberos for a cluster with
// hadoop.security.authentication=kerberos: Config.Kerberos is the login
// (package security/kerberos), the NameNode's principal comes from
// dfs.namenode.kerberos.principal (_HOST per NameNode) and the DataNodes'
// SASL protection from dfs.data.transfer.protection. Without a login such a
// cluster is refused with ErrNoKerberosLogin.
package hdfs
