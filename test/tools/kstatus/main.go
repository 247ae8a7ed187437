// kstatus reads Kubernetes objects as JSON (one per line) on stdin and prints, for each,
// the status kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) computes: the same
// logic Flux, Argo CD's kstatus-based checks and `kpt live status` use. Built by
// scripts/build-kstatus.sh for test/integration/kstatus.test.ts. Not part of the product.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type answer struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		// As a client reads it from the API server: integers as int64, which kstatus expects.
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(in.Bytes()); err != nil {
			fmt.Fprintln(os.Stderr, "kstatus: not a Kubernetes object:", err)
			os.Exit(2)
		}
		result, err := status.Compute(object)
		a := answer{}
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Status = result.Status.String()
			a.Message = result.Message
		}
		if err := out.Encode(a); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}
