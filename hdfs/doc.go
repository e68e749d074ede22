// Package hdfs will adapt github.com/colinmarc/hdfs/v2 to Sluice's
// filesystem interface for hdfs:// checkpoint, savepoint, HA and staging
// paths, with Kerberos and delegation tokens. Nothing here works yet (the
// fault-tolerance and YARN issues).
package hdfs
