// Package gymbearertokenauth is contrib's bearertokenauth extension, with the requests it
// refuses counted and logged with their peer (contrib's refuses in silence: a sender with a
// wrong token would leave no trace in the collector). See README.md.
package gymbearertokenauth
