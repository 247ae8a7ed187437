// A short scenario through the Go client openapi-generator (-g go) makes of the served
// document. test/integration/generated-clients.test.ts generates the package into
// generated/, builds it (`go build ./...`), then runs this with the service's URL and a key
// and checks the JSON it prints.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	cloudplane "cloudplane.dev/cloudplane/go-client"
)

// Byte counters are int64 in the document, so the generated client holds more than 2 GiB
// (an int32 one failed to decode 3,000,000,000): this does not compile against an int32.
var (
	_ int64 = cloudplane.VpnGateway{}.BytesSent
	_ int64 = cloudplane.VpnTunnelStatus{}.BytesReceived
)

func fail(step string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", step, err)
	os.Exit(1)
}

func main() {
	baseURL, key := os.Args[1], os.Args[2]
	config := cloudplane.NewConfiguration()
	config.Servers = cloudplane.ServerConfigurations{{URL: baseURL}}
	api := cloudplane.NewAPIClient(config).LoadBalancerAPI
	ctx := context.WithValue(context.Background(), cloudplane.ContextAccessToken, key)

	body := cloudplane.NewCreateLoadBalancerRequest("generated-go", "fra1")
	body.SetAlgorithm("least_connections")
	created, createdResponse, err := api.CreateLoadBalancer(ctx).CreateLoadBalancerRequest(*body).Execute()
	if err != nil {
		fail("create", err)
	}
	id := created.Data.Id

	got, _, err := api.GetLoadBalancer(ctx, id).Execute()
	if err != nil {
		fail("get", err)
	}

	listed, _, err := api.ListLoadBalancers(ctx).Limit(10).Execute()
	if err != nil {
		fail("list", err)
	}
	listedIds := []string{}
	for _, balancer := range listed.Data {
		listedIds = append(listedIds, balancer.Id)
	}

	// A 404 comes back as an error whose model is the document's ErrorEnvelope.
	_, missingResponse, err := api.GetLoadBalancer(ctx, "lb_doesnotexist00000000").Execute()
	var missing *cloudplane.GenericOpenAPIError
	if !errors.As(err, &missing) {
		fail("get a missing one", fmt.Errorf("expected a GenericOpenAPIError, got %v", err))
	}
	envelope, ok := missing.Model().(cloudplane.ErrorEnvelope)
	if !ok {
		fail("get a missing one", fmt.Errorf("expected an ErrorEnvelope, got %T", missing.Model()))
	}

	deleted, _, err := api.DeleteLoadBalancer(ctx, id).Execute()
	if err != nil {
		fail("delete", err)
	}

	out, _ := json.Marshal(map[string]any{
		"created":        map[string]string{"id": id, "name": created.Data.Name, "region": created.Data.Region, "algorithm": created.Data.Algorithm, "status": created.Data.Status},
		"status_code":    createdResponse.StatusCode,
		"location":       createdResponse.Header.Get("Location"),
		"got_name":       got.Data.Name,
		"listed_ids":     listedIds,
		"missing_status": missingResponse.StatusCode,
		"missing_code":   envelope.Error.Code,
		"deleted_status": deleted.Data.Status,
	})
	fmt.Println(string(out))
}
