import Foundation

/// The entry points of the libFuzzer harnesses (`Sources/couchette-fuzz`, run by `scripts/fuzz`):
/// each feeds arbitrary bytes to one reader of outside input, the way a user, a file or a peer
/// reaches it, and checks what must hold for any input. Any trap, sanitizer report or failed
/// check is a bug; a thrown ``CouchetteError`` is the expected answer to bad input.
///
/// `package`, not public: only the harness executable and the regression tests call it.
///
/// ```swift
/// let harness = try await FuzzHarness(target: .json, directory: "/tmp/fuzz")
/// await harness.run(Array(#"{"a":[1,2.5,"x"]}"#.utf8))
/// ```
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// `Database.createQuery`: the SQL++ lexer, parser and compiler (constant folding included).
    case query
    /// The JSON reader into values and straight into the binary encoding, and back to JSON.
    case json
    /// ``EncodedValue`` over arbitrary bytes, as a damaged file would present them.
    case binary
    /// The listener's request handling: method, path, query string, headers and body.
    case listener
    /// Replicated revisions in CouchDB's shape (`_id`, `_rev`, `_revisions`, `_attachments`)
    /// taken in by ``LocalPeer`` and then edited locally.
    case document
    /// A `multipart/related` document as CouchDB's replicator PUTs it: the first line is the
    /// `Content-Type` (with the boundary), the rest the body, fed to ``MultipartReader`` in
    /// uneven pieces and read by ``MultipartDocumentReader`` into the blob store, then grafted.
    case multipart
}
