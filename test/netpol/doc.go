// Package netpol checks what the crawler NetworkPolicies mean, not only
// what they say: it feeds the policies that the chart renders and that the
// manager ensures (written to testdata by test/chart's
// TestNetworkPolicyFixturesAreCurrent, which fails when they are stale) to
// an evaluator written by someone else, the matcher of
// github.com/mattfenwick/cyclonus, and asks it about traffic a crawler Pod
// may and may not send or receive. No node of the development cluster
// enforces NetworkPolicy (no enforcing CNI runs on its kernel); this is
// where the policy's meaning is checked.
//
// It is a module of its own because cyclonus pins Kubernetes libraries
// older than the operator's; it does not import the operator's module.
package netpol
