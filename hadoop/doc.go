// Package hadoop holds what Sluice shares with every Hadoop-facing package
// (yarn/, hdfs/): the Hadoop configuration files (core-site.xml,
// hdfs-site.xml, yarn-site.xml found through HADOOP_CONF_DIR/YARN_CONF_DIR),
// Hadoop token storage files ("HDTS", the format of HADOOP_TOKEN_FILE_LOCATION
// and of a container's credentials), and the translation of Java exceptions
// raised by Hadoop servers into Go errors.
//
// The package is a leaf: it imports nothing from Sluice and does no network
// I/O.
package hadoop
