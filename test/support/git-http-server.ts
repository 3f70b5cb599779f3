// The tests' Git smart-HTTP server is the development one (src/dev/), so the README's quick start and the tests
// serve repositories the same way.
export * from '../../src/dev/git-http-server.js';
