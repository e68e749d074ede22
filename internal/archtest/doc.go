// Package archtest enforces the import rules of the module: one allowlist
// per package (the table in rules_test.go), checked by TestImportRules over
// every file go list reports (non-test, test and integration-tagged files,
// and files of other systems), with the standard library taken from go list
// std. ARCHITECTURE.md's "Import rules" section is generated from the table:
// go test ./internal/archtest -rewrite.
package archtest
