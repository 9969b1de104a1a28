// Package kubernetes holds glmbench's Kubernetes manifests (agents.yaml: a
// headless Service and an Indexed Job of agents; coordinator.yaml: a
// ConfigMap with the endpoint and the coordinator Job) and the tests that
// decode them strictly into the k8s.io/api types and check that the objects
// agree with one another and with the project's Dockerfile.
//
// The package has no code of its own: only its test imports k8s.io/api, so
// the glmbench binary does not link it.
package kubernetes
