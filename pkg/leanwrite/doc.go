// Package leanwrite makes the controller's writes of its own records
// (Applications' status, ApplicationRevisions, ResourceTrackers) without
// sending or reading back what it already holds.
//
// controller-runtime's client sends whole objects and decodes the API
// server's answer, the whole object again, into the object written. For
// an ApplicationRevision, which carries every definition its Application
// was parsed against (tens of KiB of JSON), or an Application's status
// write, that is most of the CPU the write costs the controller, and all
// of it garbage at once, for the few fields it did not know before.
//
//   - PatchStatus writes a status as a JSON merge patch made from the
//     status alone (before and after), not from the whole object.
//   - Creating wraps a client so that creating the named kinds reads back
//     only the metadata the API server set (uid, resourceVersion,
//     creationTimestamp, a generated name).
//
// Both ask for the API server's answer as PartialObjectMetadata, which
// its create and patch handlers serve as its get and list handlers do.
package leanwrite
