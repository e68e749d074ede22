package jobmaster

import "testing"

func TestQualify(t *testing.T) {
	for _, tc := range []struct{ base, p, want string }{
		{"hdfs://nn:8020/savepoints", "/savepoints/savepoint-abc-1", "hdfs://nn:8020/savepoints/savepoint-abc-1"},
		{"hdfs:///savepoints", "/savepoints/savepoint-abc-1", "hdfs:///savepoints/savepoint-abc-1"},
		{"HDFS://nn/x", "/x/chk-3", "hdfs://nn/x/chk-3"},
		{"s3://bucket/ckpt", "/ckpt/j/chk-1", "s3://bucket/ckpt/j/chk-1"},
		{"file:///tmp/sp", "/tmp/sp/savepoint-abc-1", "/tmp/sp/savepoint-abc-1"},
		{"/tmp/sp", "/tmp/sp/savepoint-abc-1", "/tmp/sp/savepoint-abc-1"},
		{"", "/tmp/x", "/tmp/x"},
		{"hdfs://nn/dir with space", "/dir with space/chk-1", "hdfs://nn/dir%20with%20space/chk-1"},
	} {
		if got := qualify(tc.base, tc.p); got != tc.want {
			t.Errorf("qualify(%q, %q) = %q, want %q", tc.base, tc.p, got, tc.want)
		}
	}
}
