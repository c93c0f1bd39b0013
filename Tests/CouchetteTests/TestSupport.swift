import Foundation
import Glibc
import Testing

@testable import Couchette

/// A fresh folder for one test's databases, removed when the test ends.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("couchette-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    var configuration: DatabaseConfiguration { DatabaseConfiguration(directory: path) }

    func open(_ name: String = "test") throws -> Database {
        try Database(name: name, config: configuration)
    }
}

/// Runs `body` with a fresh database in a fresh folder, closing it afterwards.
nonisolated(nonsending) func withDatabase<R>(_ name: String = "test", _ body: (Database, TemporaryDirectory) async throws -> R) async throws
    -> R
{
    let directory = try TemporaryDirectory()
    let database = try directory.open(name)
    do {
        let result = try await body(database, directory)
        try await database.close()
        return result
    } catch {
        try? await database.close()
        throw error
    }
}

/// Asserts that `body` throws a ``CouchetteError`` with `code`, and returns its message.
@discardableResult
func expectCouchetteError(
    _ code: CouchetteError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> String? {
    do {
        try await body()
        Issue.record("expected CouchetteError.\(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as CouchetteError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error.message
    } catch {
        Issue.record("expected CouchetteError.\(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Polls `condition` until it holds or `timeout` passes.
nonisolated(nonsending) func eventually(timeout: Duration = .seconds(5), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Waits until `count()` reaches `target`, and gives up only when it stops moving for `stallLimit`.
///
/// For loops whose total time depends on the machine (sanitizers, a loaded CI host) where what the
/// test claims is that every step ends: a stuck step stops the count, a slow machine only slows it.
///
/// ```swift
/// let allEnded = await progressReaches(2000) { finished.withLock { $0 } }
/// ```
nonisolated(nonsending) func progressReaches(
    _ target: Int, stallLimit: Duration = .seconds(30), _ count: () -> Int
) async -> Bool {
    var last = count()
    var lastMove = ContinuousClock.now
    while last < target {
        try? await Task.sleep(for: .milliseconds(20))
        let now = count()
        if now != last {
            last = now
            lastMove = .now
        } else if ContinuousClock.now - lastMove > stallLimit {
            return false
        }
    }
    return true
}

// MARK: - Query fixtures

/// The fixtures in `Tests/CouchetteTests/Fixtures` (see its README for where each comes from).
enum Fixtures {
    /// The fixtures folder, found from this source file so that tests run from any directory.
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// The path of `file`, relative to the fixtures folder (`data/names_100.json`).
    static func path(_ file: String) -> String {
        directory.appendingPathComponent(file).path
    }

    /// The JSON text of each document of `file` (relative to the fixtures folder): one per line for
    /// JSON-lines files, or the elements of a file holding one JSON array.
    static func lines(_ file: String) throws -> [String] {
        let text = try String(contentsOfFile: path(file), encoding: .utf8)
        if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("[") {
            let array = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] ?? []
            return try array.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        }
        return text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
    }

    /// The documents of `file` as plain dictionaries, in order.
    static func documents(_ file: String) throws -> [[String: Any]] {
        try lines(file).map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// Saves every document of `file` into `collection` in one batch, with ids from
    /// `id(index, document)` (default: `doc-001`, `doc-002`, … as Couchbase Lite's tests number
    /// them). Returns the ids.
    @discardableResult
    static func load(
        _ file: String, into collection: Collection, in database: Database,
        id: (Int, [String: Any]) -> String = { index, _ in String(format: "doc-%03d", index + 1) }
    ) async throws -> [String] {
        let lines = try lines(file)
        let documents = try lines.enumerated().map { index, line in
            let plain = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            return try MutableDocument(id: id(index, plain), json: line)
        }
        try await database.inBatch { batch in
            for document in documents { try batch.save(document: document, in: collection) }
        }
        return documents.map(\.id)
    }
}

/// Runs `sql` and returns each row's `toJSON()`.
func queryJSON(_ database: Database, _ sql: String, parameters: Parameters? = nil) async throws -> [String] {
    let query = try database.createQuery(sql)
    query.parameters = parameters
    return try await query.execute().map { $0.toJSON() }
}

// MARK: - Change feeds

extension ChangeStream {
    /// The next event, or nil when the stream ended; gives up (ending the stream) after `timeout`
    /// so that a missing event fails the test instead of hanging it.
    func next(timeout: Duration = .seconds(20)) async -> Element? {
        let buffer = self.buffer
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { buffer.terminate() }
        }
        defer { timer.cancel() }
        return await buffer.next()
    }
}

/// `collection`'s change stream, opened on a thread of its own while the calling thread waits:
/// what a reader on another thread does while, say, the writer thread is inside a transaction.
func changesOpenedOnAnotherThread(_ collection: Collection) -> ChangeStream<CollectionChange> {
    let stream = Locked<ChangeStream<CollectionChange>?>(nil)
    let opened = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let changes = collection.changes()
        stream.withLock { $0 = changes }
        opened.signal()
    }
    opened.wait()
    return stream.withLock { $0! }
}

extension Database {
    /// Commit observers currently registered (change feeds and live queries).
    nonisolated var observerCount: Int { observation.observers.count }
}

/// Waits for `process` to end without blocking a thread: a blocking `waitUntilExit()` would hold
/// one of the cooperative pool's two threads here and starve every other test meanwhile.
func waitForExit(_ process: Process) async {
    while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
}

/// Runs the built `couchette` tool to completion (output discarded) and returns its exit status.
@discardableResult
func runTool(_ arguments: [String]) async throws -> Int32 {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
    child.arguments = arguments
    child.standardOutput = FileHandle.nullDevice
    try await startProcess(child)
    await waitForExit(child)
    return child.terminationStatus
}

/// Starts a child process. Tests run in parallel, and Foundation's `Process.run()` on Linux was
/// seen to crash (in `memcpy`) when several threads start processes at once, so every test starts
/// its children through this one lock.
///
/// A second Foundation bug needs more than the lock: `Process.run()` (Swift 6.3.1) over-reads the
/// dirents of `/proc/self/fd` (swift-corelibs-foundation #5472) and crashes when the listing fills
/// glibc's 32 KB readdir buffer — about 1,350 open descriptors, which this suite's parallel tests
/// (hundreds of open databases, listeners, sockets) exceed at its start. So a child starts once
/// the process holds fewer than 1,000 descriptors (waiting at most a minute).
func startProcess(_ process: Process) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while openDescriptorCount() >= 1000, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
    }
    // Launching takes the lock and `posix_spawn`, which under load was seen to take seconds:
    // on one of the cooperative pool's two threads that stalled every other test (listener
    // tests then failed with "no data for 30 s"). So the launch runs on a thread of its own.
    let launching = process
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        Thread.detachNewThread {
            continuation.resume(with: Result { try processLaunchLock.withLock { try launching.run() } })
        }
    }
}

/// How many file descriptors this process has open.
private func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}

private let processLaunchLock = NSLock()

// MARK: - HTTP over loopback (listener and replication tests)

/// One HTTP answer: status, lowercased headers, the body as text and parsed JSON (nil if not JSON).
struct HTTPReply: Sendable {
    let status: Int
    let headers: [String: String]
    let text: String
    var json: Value? { try? JSON.parse(text) }
}

/// Sends one request with the shared ``HTTPClient`` (30 s idle timeout: the whole suite shares
/// 2 cores). A `Content-Type` given in `headers` replaces the default JSON one.
func httpRequest(_ method: String, _ url: String, body: String? = nil, headers: [String: String] = [:]) async throws -> HTTPReply {
    var request = HTTPClientRequest(method: method, url: url, headers: headers.map { (name: $0.key, value: $0.value) })
    request.idleTimeout = .seconds(30)
    if let body {
        request.body = Data(body.utf8)
        if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            request.headers.append(("Content-Type", "application/json"))
        }
    }
    let response = try await HTTPClient.shared.data(for: request)
    return HTTPReply(status: response.status, headers: response.headers, text: String(decoding: response.body, as: UTF8.self))
}

/// Writes `bytes` to 127.0.0.1:`port` on a plain socket and returns whatever comes back before the
/// server closes the connection or 3 seconds pass. Runs on its own thread (blocking socket calls
/// stay off the cooperative pool).
func rawExchange(port: UInt16, _ bytes: [UInt8]) async -> String {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var timeout = timeval(tv_sec: 3, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { return continuation.resume(returning: "") }
            _ = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(socket, Int32(SHUT_WR))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            continuation.resume(returning: String(decoding: received, as: UTF8.self))
        }
    }
}

/// A listener configuration serving plain HTTP: the listener's default is HTTPS, and the suites
/// written before TLS talk `http://` to it (TLSListenerTests cover HTTPS).
func plainHTTPListenerConfiguration(_ collections: [Collection]) -> URLEndpointListenerConfiguration {
    var config = URLEndpointListenerConfiguration(collections: collections)
    config.disableTLS = true
    return config
}

/// A listener configuration for `transport`: plain HTTP, or HTTPS with ``TestIdentity``.
func listenerConfiguration(_ collections: [Collection], over transport: Transport) throws -> URLEndpointListenerConfiguration {
    var config = plainHTTPListenerConfiguration(collections)
    if transport == .https {
        config.disableTLS = false
        config.tlsIdentity = try TestIdentity.listener()
    }
    return config
}

/// Runs `body` with a started listener serving `collections` (plain HTTP unless `transport`
/// says HTTPS) and its base URL, stopping it afterwards.
nonisolated(nonsending) func withListener<R>(
    _ collections: [Collection], over transport: Transport = .http,
    configure: (inout URLEndpointListenerConfiguration) -> Void = { _ in },
    _ body: (URLEndpointListener, String) async throws -> R
) async throws -> R {
    var config = try listenerConfiguration(collections, over: transport)
    configure(&config)
    let listener = URLEndpointListener(config: config)
    try await listener.start()
    do {
        let result = try await body(listener, "\(transport == .https ? "https" : "http")://127.0.0.1:\(listener.port!)")
        await listener.stop()
        return result
    } catch {
        await listener.stop()
        throw error
    }
}
