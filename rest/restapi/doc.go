// Package restapi holds the messages of Sluice's Flink-shaped REST API: the
// request and response types with Flink's JSON encodings (and the Java
// serializations Flink's client expects inside some of them), job and
// trigger IDs, the REST token file, the binary's build version, and the
// error classes both ends of the wire map HTTP statuses to. The server
// (package rest) and its clients (rest/restclient, the CLI, job binaries)
// import it; neither imports the other, so a client never links the server.
package restapi
