import CCivetWeb
import Dispatch
import Foundation

/// A civetweb server that reads each request on a civetweb worker thread, answers it with an
/// async Swift handler, and writes the response back on that same worker thread.
///
/// The worker blocks on a semaphore while the handler runs in a task; the Swift cooperative pool
/// never waits for civetweb. ``stop()`` cancels every running handler (long polls and continuous
/// feeds end), then runs `mg_stop`, which returns once every worker has closed its connection.
final class HTTPServer: Sendable {
    typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    struct Counts: Sendable {
        var connections = 0
        var activeRequests = 0
    }

    /// The civetweb context pointer.
    // @unchecked: civetweb's context is thread-safe by design (its API is called from every worker
    // thread); we only pass the pointer to civetweb functions and never dereference it ourselves.
    private struct Context: @unchecked Sendable { let pointer: OpaquePointer }

    private struct State {
        var context: Context?
        var stopping = false
        var counts = Counts()
        var nextTaskID: UInt64 = 0
        var tasks: [UInt64: Task<Void, Never>] = [:]
    }

    private let handler: Handler
    private let maximumBodySize: Int
    private let state = Locked(State())

    init(maximumBodySize: Int, handler: @escaping Handler) {
        self.maximumBodySize = maximumBodySize
        self.handler = handler
    }

    var counts: Counts { state.withLock { $0.counts } }
    var isRunning: Bool { state.withLock { $0.context != nil && !$0.stopping } }

    // MARK: - Starting and stopping

    /// What the server needs for HTTPS: its identity and, to require client certificates, the
    /// roots (DER) they must chain to.
    struct TLSSetup: Sendable {
        var identity: TLSIdentity
        var clientRoots: [Data]?
    }

    /// Binds `host:port` (port 0: any free port), serving HTTPS when `tls` is given, and returns
    /// the bound port.
    /// - Throws: `.io` when civetweb cannot bind, `.tls` when it cannot set up TLS, `.busy` when
    ///   already running.
    func start(host: String, port: UInt16, threads: Int, tls: TLSSetup? = nil) throws -> UInt16 {
        try state.withLock { state in
            guard state.context == nil else { throw CouchetteError(.busy, "the listener is already running") }
            state.stopping = false
        }
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var options = [
            "listening_ports", tls == nil ? address : address + "s",  // "s": this port speaks TLS
            "num_threads", String(threads),
            "enable_keep_alive", "yes",
            "keep_alive_timeout_ms", "15000",
            "request_timeout_ms", "120000",
            "max_request_size", "65536",
            "tcp_nodelay", "1",  // else Nagle holds the body behind the headers for a delayed ACK (~40 ms)
        ]
        // civetweb reads certificates and keys from files, once, in mg_start: they are written to a
        // private directory (0700, files 0600) that is deleted as soon as mg_start returns.
        if tls != nil, let problem = CivetWebTLS.problem {
            throw CouchetteError(.tls, "cannot serve HTTPS on \(address): \(problem)")
        }
        let files = try tls.map { try TLSFiles($0) }
        defer { files?.remove() }
        if let files {
            options += [
                "ssl_certificate", files.identityPath,
                "ssl_protocol_version", "4",  // TLS 1.2 and newer only
            ]
            if let rootsPath = files.rootsPath {
                options += [
                    "ssl_verify_peer", "yes",  // a client without an accepted certificate fails the handshake
                    "ssl_ca_file", rootsPath,
                    "ssl_default_verify_paths", "no",  // only the configured roots, not the system's CAs
                ]
            }
        }
        var callbacks = HTTPServer.callbacks()
        // The context holds this pointer until mg_stop returns; the retain is released in stop().
        let userData = Unmanaged.passRetained(self).toOpaque()
        var errorText = [CChar](repeating: 0, count: 512)
        let context: OpaquePointer? = withCStringArray(options) { optionPointers in
            errorText.withUnsafeMutableBufferPointer { text in
                withUnsafePointer(to: &callbacks) { callbackPointer in
                    var initData = mg_init_data(
                        callbacks: callbackPointer, user_data: userData,
                        configuration_options: UnsafeMutablePointer(mutating: optionPointers))
                    var errorData = mg_error_data(code: nil, text: text.baseAddress, text_buffer_size: text.count)
                    return mg_start2(&initData, &errorData)
                }
            }
        }
        guard let context else {
            Unmanaged<HTTPServer>.fromOpaque(userData).release()
            let reason = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if tls != nil, reason.lowercased().contains("ssl") || reason.contains("lib") {
                // Debian's civetweb dlopen()s "libssl.so" and "libcrypto.so", which libssl-dev provides.
                throw CouchetteError(
                    .tls, "could not serve HTTPS on \(address): \(reason) (civetweb loads libssl.so at run time: install libssl-dev)")
            }
            throw CouchetteError(.io, "could not listen on \(address) (\(reason.isEmpty ? "address in use or not available" : reason))")
        }
        if tls != nil { CivetWebTLS.repair() }
        var ports = [mg_server_port](repeating: mg_server_port(), count: 4)
        let found = mg_get_server_ports(context, Int32(ports.count), &ports)
        state.withLock { $0.context = Context(pointer: context) }
        guard found > 0, ports[0].port > 0, ports[0].port <= Int32(UInt16.max) else {
            throw CouchetteError(.io, "civetweb did not report the port it listens on for \(address)")
        }
        return UInt16(ports[0].port)
    }

    /// Cancels running handlers, closes the listening socket and every connection, and returns
    /// when civetweb's threads have stopped. Safe to call more than once.
    func stop() async {
        let (context, tasks) = state.withLock { state -> (Context?, [Task<Void, Never>]) in
            state.stopping = true
            defer { state.context = nil }
            return (state.context, Array(state.tasks.values))
        }
        guard let context else { return }
        for task in tasks { task.cancel() }
        // mg_stop blocks until its workers finish: run it on a thread of its own.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                mg_stop(context.pointer)
                continuation.resume()
            }
        }
        Unmanaged.passUnretained(self).release()
    }

    // MARK: - Civetweb callbacks

    private static func server(for connection: OpaquePointer?) -> HTTPServer? {
        guard let connection, let context = mg_get_context(connection),
            let userData = mg_get_user_data(context)
        else { return nil }
        return Unmanaged<HTTPServer>.fromOpaque(userData).takeUnretainedValue()
    }

    private static func callbacks() -> mg_callbacks {
        var callbacks = mg_callbacks()
        callbacks.begin_request = { connection in
            guard let connection, let server = HTTPServer.server(for: connection) else { return 0 }
            return Int32(server.serve(connection))
        }
        callbacks.init_connection = { connection, _ in
            HTTPServer.server(for: connection)?.state.withLock { $0.counts.connections += 1 }
            return 0
        }
        callbacks.connection_closed = { connection in
            HTTPServer.server(for: connection)?.state.withLock { $0.counts.connections -= 1 }
        }
        callbacks.log_message = { _, _ in 1 }  // errors reach the client as JSON; nothing on stderr
        callbacks.http_error = { connection, status, _ in
            // Requests civetweb rejects before our handler (malformed request lines, oversize
            // headers) still get CouchDB's JSON error shape.
            guard let connection else { return 1 }
            let body = Array(
                JSON.string(
                    from: .dictionary([
                        "error": .string(status == 413 || status == 431 ? "too_large" : "bad_request"),
                        "reason": .string("the HTTP request could not be read (status \(status))"),
                    ])
                ).utf8)
            let head =
                "HTTP/1.1 \(status) Error\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            _ = head.withCString { mg_write(connection, $0, strlen($0)) }
            _ = body.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
            return 0
        }
        return callbacks
    }

    // MARK: - Serving one request (on a civetweb worker thread)

    private func serve(_ connection: OpaquePointer) -> Int {
        state.withLock { $0.counts.activeRequests += 1 }
        defer { state.withLock { $0.counts.activeRequests -= 1 } }
        guard let info = mg_get_request_info(connection)?.pointee else { return 0 }
        let method = info.request_method.map { String(cString: $0) } ?? "GET"
        let request: HTTPRequest
        switch readRequest(connection, info) {
        case .request(let read): request = read
        case .rejected(let response):
            write(response, to: connection, method: method, closing: true)
            return response.status
        }
        if state.withLock({ $0.stopping }) {
            let response = HTTPResponse.error(503, "service_unavailable", "the listener is stopping")
            write(response, to: connection, method: method, closing: true)
            return 503
        }
        let response =
            run(reading: request.bodyStream, from: connection) { [handler] in await handler(request) }
            ?? .error(503, "service_unavailable", "the listener is stopping")
        write(response, to: connection, method: method, closing: false)
        return response.status
    }

    /// Runs `body` in a task registered for cancellation by ``stop()`` and blocks this worker
    /// thread until it returns, meanwhile reading the request body piece by piece for it when it
    /// streams one (`stream`, whose `wake` semaphore is the one this thread waits on).
    private func run<T: Sendable>(
        reading stream: RequestBodyStream? = nil, from connection: OpaquePointer? = nil,
        _ body: @escaping @Sendable () async -> T
    ) -> T? {
        let result = Locked<T??>(nil)
        let done = stream?.wake ?? DispatchSemaphore(value: 0)
        let task = Task {
            let value = await body()
            result.withLock { $0 = .some(value) }
            done.signal()
        }
        let id = register(task)
        while true {
            done.wait()
            if let value = result.withLock({ $0 }) {
                unregister(id)
                return value
            }
            if let stream, let connection {
                _ = stream.serve { buffer in Int(mg_read(connection, buffer.baseAddress, buffer.count)) }
            }
        }
    }

    /// Whether a request's body is read while its handler runs instead of before: a
    /// `multipart/related` document PUT, whose attachments go to the blob store as they arrive
    /// (memory stays at a piece, and ``maximumBodySize`` does not apply: each attachment's size
    /// is bounded by the length its entry declares).
    static func streamsBody(method: String, contentType: String?) -> Bool {
        method == "PUT" && contentType?.lowercased().hasPrefix("multipart/related") == true
    }

    /// Tracks `task` so ``stop()`` can cancel it; cancels it at once when the server is stopping.
    private func register(_ task: Task<Void, Never>) -> UInt64 {
        let (id, stopping) = state.withLock { state in
            state.nextTaskID += 1
            state.tasks[state.nextTaskID] = task
            return (state.nextTaskID, state.stopping)
        }
        if stopping { task.cancel() }
        return id
    }

    private func unregister(_ id: UInt64) {
        _ = state.withLock { $0.tasks.removeValue(forKey: id) }
    }

    private func write(_ response: HTTPResponse, to connection: OpaquePointer, method: String, closing: Bool) {
        mg_response_header_start(connection, Int32(response.status))
        for (name, value) in response.headers {
            mg_response_header_add(connection, name, value, -1)
        }
        if closing { mg_response_header_add(connection, "Connection", "close", -1) }
        switch response.body {
        case .bytes(let bytes):
            mg_response_header_add(connection, "Content-Length", String(bytes.count), -1)
            mg_response_header_send(connection)
            if method != "HEAD", !bytes.isEmpty {
                _ = bytes.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
            }
        case .stream(let producer):
            mg_response_header_add(connection, "Transfer-Encoding", "chunked", -1)
            mg_response_header_send(connection)
            let complete = pump(producer) { chunk in
                chunk.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { mg_send_chunk(connection, $0.baseAddress, UInt32($0.count)) >= 0 }
                }
            }
            if complete { mg_send_chunk(connection, "", 0) }
        case .sized(let length, let producer):
            mg_response_header_add(connection, "Content-Length", String(length), -1)
            mg_response_header_send(connection)
            guard method != "HEAD" else { return }
            var left = length
            let complete = pump(producer) { chunk in
                // Never more than announced: the client would read the excess as the next response.
                let count = Int(min(UInt64(chunk.count), left))
                left -= UInt64(count)
                let written = chunk.withUnsafeBytes { mg_write(connection, $0.baseAddress, count) }
                return written == count && count == chunk.count
            }
            if !complete || left > 0 { mg_disable_connection_keep_alive(connection) }
        }
    }

    /// Runs `producer` in a task registered for cancellation by ``stop()`` and hands each chunk
    /// it queues to `send` on this worker thread; false when `send` failed (the producer is
    /// then cancelled).
    private func pump(_ producer: @escaping @Sendable (ResponseStream) async -> Void, send: ([UInt8]) -> Bool) -> Bool {
        let stream = ResponseStream()
        let task = Task {
            await producer(stream)
            stream.finish()
        }
        let id = register(task)
        defer { unregister(id) }
        while let chunk = stream.next() {
            if !send(chunk) {
                stream.cancel()
                task.cancel()
                return false
            }
        }
        return true
    }

    private enum ReadOutcome {
        case request(HTTPRequest)
        case rejected(HTTPResponse)
    }

    private func readRequest(_ connection: OpaquePointer, _ info: mg_request_info) -> ReadOutcome {
        var headers: [String: String] = [:]
        withUnsafeBytes(of: info.http_headers) { raw in
            let all = raw.bindMemory(to: mg_header.self)
            for header in all.prefix(Int(max(0, min(info.num_headers, MG_MAX_HEADERS)))) {
                guard let name = header.name, let value = header.value else { continue }
                headers[String(cString: name).lowercased()] = String(cString: value)
            }
        }
        let method = info.request_method.map { String(cString: $0) } ?? "GET"
        let path = (info.local_uri ?? info.request_uri).map { String(cString: $0) } ?? "/"
        let query = info.query_string.map { String(cString: $0) } ?? ""
        if Self.streamsBody(method: method, contentType: headers["content-type"]) {
            var request = HTTPRequest(method: method, path: path, rawQuery: query, headers: headers, body: [])
            request.bodyStream = RequestBodyStream(wake: DispatchSemaphore(value: 0))
            return .request(request)
        }
        if info.content_length > Int64(maximumBodySize) {
            return .rejected(
                .error(
                    413, "too_large",
                    "the request body (\(info.content_length) bytes) exceeds the listener's limit of \(maximumBodySize) bytes"))
        }
        var body: [UInt8] = []
        if info.content_length > 0 { body.reserveCapacity(Int(info.content_length)) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress, $0.count) }
            if count < 0 { return .rejected(.error(400, "bad_request", "the request body could not be read")) }
            if count == 0 { break }
            body += buffer[0..<Int(count)]
            if body.count > maximumBodySize {
                return .rejected(.error(413, "too_large", "the request body exceeds the listener's limit of \(maximumBodySize) bytes"))
            }
        }
        return .request(HTTPRequest(method: method, path: path, rawQuery: query, headers: headers, body: body))
    }
}

/// The PEM files civetweb reads while starting, in a directory only this user can read.
private struct TLSFiles {
    let directory: String
    let identityPath: String
    let rootsPath: String?

    init(_ setup: HTTPServer.TLSSetup) throws {
        var template = Array((FileManager.default.temporaryDirectory.path + "/couchette-tls-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else {
            throw CouchetteError(.io, "could not create a private directory for the listener's TLS files (errno \(errno))")
        }
        directory = String(cString: created)
        identityPath = directory + "/identity.pem"
        do {
            // The key first, then the chain: civetweb loads both from this one file.
            try Self.write(setup.identity.privateKeyPEM + setup.identity.certificatePEM, to: identityPath)
            if let roots = setup.clientRoots {
                guard !roots.isEmpty else {
                    throw CouchetteError(.invalidParameter, "ListenerCertificateAuthenticator needs at least one root certificate")
                }
                var pem = Data()
                for root in roots { pem += try OpenSSLCertificate(der: root).pem() }
                rootsPath = directory + "/client-roots.pem"
                try Self.write(pem, to: rootsPath!)
            } else {
                rootsPath = nil
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            if let error = error as? CouchetteError, error.code == .tls {
                throw CouchetteError(.invalidParameter, "a root certificate of ListenerCertificateAuthenticator is not a DER certificate")
            }
            throw error
        }
    }

    private static func write(_ data: Data, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CouchetteError(.io, "could not write the listener's TLS file \(path)")
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    var pointers: [UnsafePointer<CChar>?] = duplicates.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}
