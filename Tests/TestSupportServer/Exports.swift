/// A test that starts a `TestServer` holds its `Application` (and may configure its
/// `ApplicationDependencies`), which live in the composition root, `LocifyServer`.
@_exported import LocifyServer
