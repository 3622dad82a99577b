package endpointslice

// HintsOf lets the API-level tests (package endpointslice_test) render hints as the unit tests do.
var HintsOf = hintsOf
