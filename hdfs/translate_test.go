package hdfs

import (
	"errors"
	iofs "io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice/sluice/hadoop"
)

// javaErr is an error as colinmarc/hdfs returns for a Java exception.
type javaErr struct{ class, msg string }

func (e javaErr) Error() string     { return e.class + ": " + e.msg }
func (e javaErr) Method() string    { return "create" }
func (e javaErr) Desc() string      { return "ERROR_APPLICATION" }
func (e javaErr) Exception() string { return e.class }
func (e javaErr) Message() string   { return e.msg + "\n\tat org.apache.hadoop..." }

func TestTranslate(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		is    []error
		class string // the *hadoop.RemoteError class expected, "" for none
		text  string
	}{
		{"colinmarc's own translation", &os.PathError{Op: "create", Path: "/a/b", Err: os.ErrNotExist}, []error{iofs.ErrNotExist}, "", "create /a/b: file does not exist"},
		{"raw FileNotFound", javaErr{"java.io.FileNotFoundException", "Parent directory doesn't exist: /a"}, []error{iofs.ErrNotExist}, "java.io.FileNotFoundException", "Parent directory doesn't exist: /a"},
		{"raw FileAlreadyExists", &os.PathError{Op: "create", Path: "/a/b", Err: javaErr{"org.apache.hadoop.fs.FileAlreadyExistsException", "/a/b exists"}}, []error{iofs.ErrExist}, "org.apache.hadoop.fs.FileAlreadyExistsException", "/a/b exists"},
		{"permission names the user", javaErr{"org.apache.hadoop.security.AccessControlException", "Permission denied: user=u, access=WRITE"}, []error{iofs.ErrPermission, hadoop.ErrAccessControl}, "org.apache.hadoop.security.AccessControlException", `as HDFS user "u"`},
		{"colinmarc's permission", &os.PathError{Op: "create", Path: "/a/b", Err: os.ErrPermission}, []error{iofs.ErrPermission}, "", `permission denied (as HDFS user "u")`},
		{"parent not a directory", javaErr{"org.apache.hadoop.fs.ParentNotDirectoryException", "/a is not a directory"}, []error{syscall.ENOTDIR}, "org.apache.hadoop.fs.ParentNotDirectoryException", "not a directory"},
		{"not empty", javaErr{"org.apache.hadoop.fs.PathIsNotEmptyDirectoryException", "/a is non empty"}, []error{syscall.ENOTEMPTY}, "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException", "non empty"},
		{"standby", javaErr{string(hadoop.ErrStandby), "Operation category WRITE is not supported in state standby"}, []error{hadoop.ErrStandby}, string(hadoop.ErrStandby), "state standby"},
		{"safe mode", javaErr{"org.apache.hadoop.hdfs.server.namenode.SafeModeException", "Name node is in safe mode."}, nil, "org.apache.hadoop.hdfs.server.namenode.SafeModeException", "safe mode"},
		{"network", errors.New("connection refused"), nil, "", "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := translate("u", "create", "/a/b", tt.err)
			var pe *iofs.PathError
			if !errors.As(err, &pe) || pe.Path != "/a/b" || pe.Op != "create" {
				t.Fatalf("%v is not a *PathError of create /a/b", err)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("%v does not match %v", err, target)
				}
			}
			var re *hadoop.RemoteError
			switch {
			case tt.class == "" && errors.As(err, &re):
				t.Errorf("%v carries a RemoteError", err)
			case tt.class != "" && (!errors.As(err, &re) || re.Class != tt.class):
				t.Errorf("%v: want a RemoteError of class %s", err, tt.class)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("%q does not say %q", err, tt.text)
			}
			if strings.Contains(err.Error(), "\tat org.apache") {
				t.Errorf("%q carries a Java stack trace", err)
			}
		})
	}
}
