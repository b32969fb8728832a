// Package gymfilestorage is contrib's file_storage extension, with the databases of its
// directory checked before they are opened (internal/storagerepair): a damaged database is
// rebuilt from what reads back, logged and counted, and the collector starts. Storage
// operations on which bbolt panics return errors instead. See README.md.
package gymfilestorage
