import Testing

extension Tag {
    /// Suites whose code runs on more than one thread, task or process at once: writers and
    /// readers, change feeds, live queries, replication, the listener, child processes. CI runs
    /// every suite with this tag a second time under ThreadSanitizer
    /// (`swift test --sanitize=thread --filter tag:concurrency`), so a new suite of that kind
    /// must carry it.
    @Tag static var concurrency: Self
}

extension Tag {
    /// Suites over the code that reads what users, files and peers send — storage, values,
    /// documents, queries, the listener, replicated revisions, the fuzz regressions. CI runs
    /// every suite with this tag a second time under AddressSanitizer
    /// (`swift test --sanitize=address --filter "$(scripts/tagged-suites sanitizeAddress)"`).
    @Tag static var sanitizeAddress: Self
}
