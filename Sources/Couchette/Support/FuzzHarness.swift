import Foundation

/// Runs one ``FuzzTarget`` over inputs, against a real database in `directory` (created once and
/// reused; nothing an input writes is kept for the next one, so a crash reproduces from its input
/// alone). Checks that must hold for every input trap with `preconditionFailure`, which libFuzzer
/// reports like any other crash.
///
/// ```swift
/// let harness = try await FuzzHarness(target: .listener, directory: NSTemporaryDirectory())
/// await harness.run(Array("GET /db/_all_docs?limit=2\n\n".utf8))
/// ```
package final class FuzzHarness: Sendable {
    package let target: FuzzTarget
    private let database: Database
    private let collection: Collection
    private let peer: LocalPeer
    private let openRouter: ListenerRouter
    private let guardedRouter: ListenerRouter

    /// The user and password the authenticating listener accepts (`Basic ZnV6ejpzZWNyZXQ=`).
    package static let user = "fuzz"
    package static let password = "secret"

    package init(target: FuzzTarget, directory: String) async throws {
        self.target = target
        database = try Database(name: "db", config: DatabaseConfiguration(directory: directory))
        collection = try database.defaultCollection()
        _ = try await database.createCollection(name: "items", scope: "store")
        peer = try LocalPeer(collection: collection)
        openRouter = ListenerRouter(config: URLEndpointListenerConfiguration(collections: [collection]))
        var guarded = URLEndpointListenerConfiguration(collections: [collection])
        guarded.authenticator = ListenerPasswordAuthenticator { $0 == FuzzHarness.user && $1 == FuzzHarness.password }
        guardedRouter = ListenerRouter(config: guarded)
    }

    package func close() async throws { try await database.close() }

    /// Feeds one input to the target; returns when it is handled. Never throws: bad input must
    /// be answered with an error, which is the expected outcome here.
    package func run(_ input: [UInt8]) async {
        switch target {
        case .query: runQuery(input)
        case .json: FuzzHarness.runJSON(input)
        case .binary: FuzzHarness.runBinary(input)
        case .listener: await runListener(input)
        case .document: await runDocument(input)
        case .multipart: await runMultipart(input)
        }
    }

    // MARK: - Query

    private func runQuery(_ input: [UInt8]) {
        _ = try? database.createQuery(String(decoding: input, as: UTF8.self))
    }

    // MARK: - JSON

    /// Both JSON readers must agree, down to the message of an error, and what they read must
    /// survive writing and reading again.
    static func runJSON(_ input: [UInt8]) {
        let text = String(decoding: input, as: UTF8.self)
        let parsed = Result { try JSON.parse(text) }
        let binary = Result { try JSON.encodeBinary(text) }
        switch (parsed, binary) {
        case (.success(let value), .success(let bytes)):
            let decoded = EncodedValue(bytes: bytes).decode()
            Self.check(decoded == value, "binary import of \(text.debugDescription) decodes to \(decoded), not \(value)")
            // Byte for byte what encoding the parsed value gives, unless two keys merged in the
            // `Value` (canonically equivalent ones, which only non-ASCII keys can be).
            if hasOnlyASCIIKeys(value) {
                Self.check((try? ValueEncoder.encode(value)) == bytes, "binary import of \(text.debugDescription) is not canonical")
            }
            let written = JSON.string(from: value)
            let reread = try? JSON.parse(written)
            Self.check(
                reread.map { sameJSON($0, value) } ?? false,
                "\(text.debugDescription) written as \(written.debugDescription) reads back as \(String(describing: reread))")
        case (.failure(let parseError), .failure(let binaryError)):
            // The same message, naming the same byte: both read with `JSONText`'s pieces, but
            // walk the text in their own ways (recursion and a loop).
            Self.check(
                "\(parseError)" == "\(binaryError)",
                "the JSON readers fail differently on \(text.debugDescription): \(parseError) vs \(binaryError)")
        default:
            preconditionFailure("the JSON readers disagree on \(text.debugDescription): \(parsed) vs \(binary)")
        }
        checkBulkPath(text, expected: try? binary.get())
    }

    /// The bulk path (``JSONDocumentBatch``: many documents in one buffer) stores exactly what
    /// ``JSON/encodeBinary(_:)`` gives for an object, after a stored document and after one that
    /// failed halfway, and refuses everything else.
    static func checkBulkPath(_ text: String, expected: [UInt8]?) {
        var builder = JSONDocumentBatch.Builder(collection: CollectionSpec(scope: "s", name: "c", number: 1), control: .lastWriteWins)
        let isObject = expected.map { EncodedValue(bytes: $0).isDictionary } ?? false
        do {
            try builder.append(id: "before", json: #"{"a":[1,{"b":null}]}"#)
            _ = try? builder.append(id: "broken", json: #"{"x":[1,{"y":"#)
            try builder.append(id: "fuzzed", json: text)
            var stored: [UInt8] = []
            try builder.finished().forEach { _, body, _ in stored = Array(body) }
            Self.check(isObject && stored == expected, "the bulk path stores \(text.debugDescription) as \(stored)")
        } catch {
            Self.check(!isObject, "the bulk path refuses the object \(text.debugDescription): \(error)")
        }
    }

    /// Whether every dictionary key in `value` is ASCII (the parser bounds its depth).
    static func hasOnlyASCIIKeys(_ value: Value) -> Bool {
        switch value {
        case .array(let elements): elements.allSatisfy(hasOnlyASCIIKeys)
        case .dictionary(let entries): entries.allSatisfy { $0.key.utf8.allSatisfy { $0 < 0x80 } && hasOnlyASCIIKeys($0.value) }
        default: true
        }
    }

    /// Equal as JSON text can say it: a whole double is written as an integer (`2.0` as `2`, as
    /// Couchbase Lite does), so numbers compare by value.
    static func sameJSON(_ left: Value, _ right: Value) -> Bool {
        switch (left, right) {
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): Double(a) == b
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy(sameJSON)
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map { sameJSON(value, $0) } ?? false }
        default: left == right
        }
    }

    // MARK: - Binary values

    /// Arbitrary bytes read as a stored body: every accessor returns, and what decodes encodes
    /// back to the same value.
    static func runBinary(_ input: [UInt8]) {
        let root = EncodedValue(bytes: input)
        var budget = 256
        visit(root, budget: &budget)
        let value = root.decode()
        if let bytes = try? ValueEncoder.encode(value) {
            let again = EncodedValue(bytes: bytes).decode()
            Self.check(again == value, "\(value) re-encoded decodes to \(again)")
            Self.check(EncodedValue(bytes: bytes).slice == bytes, "the slice of a canonical encoding is not itself")
        }
        let document = Document(id: "fuzz", revisionID: nil, sequence: 0, body: input)
        _ = document.toDictionary()
        _ = document.toJSON()
        for key in document.keys { _ = document.value(forKey: key) }
        _ = try? document.toMutable().setString("edited", forKey: "fuzz").encodeBody(lenient: true)
    }

    /// Calls every accessor on `value` and its parts, `budget` values at most.
    private static func visit(_ value: EncodedValue, budget: inout Int) {
        _ = (value.tag, value.isNull, value.bool, value.integer, value.double, value.string, value.encodedSize)
        _ = value.sliceBytes
        budget -= 1
        guard budget > 0 else { return }
        if value.isArray {
            for index in 0..<min(value.count, 64) { value.element(at: index).map { visit($0, budget: &budget) } }
            _ = value.element(at: -1)
            _ = value.element(at: value.count)
        } else if value.isDictionary {
            for (key, child) in value.entries.prefix(64) {
                visit(child, budget: &budget)
                _ = value.value(forKey: key)
            }
            _ = value.keys
            _ = value.value(forKey: "")
            value.forEachEntry { _, _ in }
        }
    }

    // MARK: - Listener

    /// The input is a request in HTTP's own layout: `METHOD /path?query`, header lines, an empty
    /// line, the body. Requests with `Authorization` or `Cookie` go to a listener that requires a
    /// login, the others to an open one. The database is emptied again afterwards.
    private func runListener(_ input: [UInt8]) async {
        let request = FuzzHarness.request(from: input)
        let router = request.headers["authorization"] != nil || request.headers["cookie"] != nil ? guardedRouter : openRouter
        let response = await router.handle(request)
        Self.check((100...599).contains(response.status), "status \(response.status) for \(request.method) \(request.path)")
        if case .bytes(let body) = response.body, response.headers.contains(where: { $0 == ("Content-Type", "application/json") }) {
            let text = String(decoding: body, as: UTF8.self)
            Self.check((try? JSON.parse(text)) != nil, "a JSON response is not JSON: \(text.debugDescription)")
        }
        await empty()
    }

    /// Splits an input into an ``HTTPRequest``. A wait the request asks for (`_changes` long
    /// polls) is cut to 10 ms, so that runs measure work, not waiting.
    static func request(from input: [UInt8]) -> HTTPRequest {
        let text = String(decoding: input, as: UTF8.self)
        let head: Substring
        let body: [UInt8]
        if let blank = text.range(of: "\n\n") {
            head = text[..<blank.lowerBound]
            body = Array(text[blank.upperBound...].utf8)
        } else {
            head = Substring(text)
            body = []
        }
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false)
        let requestLine = lines.isEmpty ? "" : lines.removeFirst()
        let words = requestLine.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        let method = words.first.map(String.init) ?? ""
        let target = words.count > 1 ? String(words[1]) : "/"
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        var headers: [String: String] = [:]
        for line in lines {
            let field = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            headers[field[0].lowercased()] = field.count > 1 ? field[1].trimmingCharacters(in: .whitespaces) : ""
        }
        var request = HTTPRequest(
            method: method, path: path.hasPrefix("/") ? path : "/" + path,
            rawQuery: parts.count > 1 ? String(parts[1]) : "", headers: headers, body: body)
        if request.query["feed"] != nil {
            let asked = request.query["timeout"].flatMap { Int($0) } ?? 10
            request.query["timeout"] = String(min(max(asked, 0), 10))
        }
        return request
    }

    // MARK: - Replicated documents

    /// The input is one document as a peer sends it (`new_edits: false`). Whatever the peer
    /// graft, the collection must then answer for it and accept a local edit on top.
    private func runDocument(_ input: [UInt8]) async {
        guard let json = try? JSON.parse(String(decoding: input, as: UTF8.self)),
            let revision = try? CouchDBDocument.revision(from: json)
        else { return }
        _ = CouchDBDocument.json(revision, includeHistory: true)
        guard let errors = try? await peer.bulkDocs([revision]) else { return await empty() }
        if errors.isEmpty {
            let diff = try? await peer.revsDiff([revision.id: [revision.revisionID]])
            Self.check(diff?[revision.id]?.missing.isEmpty ?? true, "grafted \(revision.revisionID) of \(revision.id) is reported missing")
            let fetched = try? await peer.bulkGet([RevisionRequest(id: revision.id, revisionID: revision.revisionID, knownAncestors: [])])
            if case .failed(_, _, let error)? = fetched?.first, !revision.deleted {
                preconditionFailure("grafted \(revision.revisionID) of \(revision.id) cannot be fetched: \(error)")
            }
            if let current = try? await collection.document(id: revision.id) {
                _ = current.toJSON()
                _ = try? await collection.save(document: current.toMutable().setString("local", forKey: "edit"))
            }
        }
        await empty()
    }

    // MARK: - Multipart documents

    /// Whatever the body, the reader must either throw a ``CouchetteError`` or produce a revision
    /// whose announced attachments are all stored with the length their entry declares; the
    /// pieces the body is cut into (sizes from the input itself) must not change the outcome.
    private func runMultipart(_ input: [UInt8]) async {
        let newline = input.firstIndex(of: UInt8(ascii: "\n")) ?? input.endIndex
        let contentType = String(decoding: input[..<newline], as: UTF8.self)
        let body = input[min(newline + 1, input.endIndex)...]
        let store = collection.reader.blobs
        let reader = MultipartDocumentReader(store: store, maximumJSONBytes: 1 << 20)
        defer { reader.releaseHeld() }
        var revision: PeerRevision?
        do {
            var parts = try MultipartReader(contentType: contentType)
            var offset = body.startIndex
            var step = 1
            while offset < body.endIndex {
                let end = min(offset + step, body.endIndex)
                for event in try parts.feed(body[offset..<end]) { try reader.handle(event) }
                step = step % 61 + Int(body[offset] & 7) + 1
                offset = end
            }
            try parts.finish()
            revision = try reader.revision()
        } catch let error as CouchetteError {
            Self.check(!error.message.isEmpty, "a multipart error without a message")
        } catch {
            preconditionFailure("a multipart body failed with something other than a CouchetteError: \(error)")
        }
        if let revision {
            for digest in reader.held { Self.check(store.contains(digest), "attachment \(digest) was read but is not stored") }
            _ = try? await peer.bulkDocs([revision])
        }
        await empty()
    }

    // MARK: - Support

    /// Purges every document the input left, so that the next input starts from the same state.
    private func empty() async {
        guard let changes = try? collection.replicationChanges(since: 0, limit: Int.max, documentIDs: nil).changes else { return }
        for change in changes { try? await collection.purge(id: change.id) }
    }

    private static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { preconditionFailure(message()) }
    }
}
