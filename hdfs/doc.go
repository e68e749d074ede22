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
// Authentication is SIMPLE only for now: a cluster with
// hadoop.security.authentication=kerberos is refused with
// ErrKerberosUnsupported (see Options for where Kerberos will plug in).
package hdfs
