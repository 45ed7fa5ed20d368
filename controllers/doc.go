// Package controllers holds the two reconcilers of the crawl-operator.
//
// The CrawlTarget reconciler turns each due target into one crawler Pod on
// an egress node and records the outcome in the target's status; its steps
// are in crawltarget_controller.go, its status truth table in
// crawltarget_status.go and its schedule in schedule.go; which due target
// may start now, and on which node, the crawl queue decides (crawlqueue),
// which wakes waiting targets instead of polling them. The Exclusion
// reconciler stops and purges everything under an excluded domain. Both
// build a scope from small named steps and patch the status once, with an
// optimistic lock, emitting Events and metrics only after the patch lands.
//
// This package never imports the index's wiring: the index is handed in as
// the Exclusion reconciler's PagePurger and as the egress policy; of the
// index it knows only the storage contract's error and count types
// (index/store).
// internal/operator wires both reconcilers into a manager.
package controllers
