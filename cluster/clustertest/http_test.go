package clustertest

import (
	"fmt"
	"io"
	"net/http"
)

func httpGet(addr string) ([]byte, error) {
	resp, err := http.Get("http://" + addr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", addr, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
