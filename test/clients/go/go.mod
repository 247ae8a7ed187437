module cloudplane.dev/generated-client-scenario

go 1.23

require cloudplane.dev/cloudplane/go-client v0.0.0

// test/integration/generated-clients.test.ts generates the client here with openapi-generator (-g go).
replace cloudplane.dev/cloudplane/go-client => ./generated
