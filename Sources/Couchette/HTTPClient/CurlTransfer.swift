import CCrypto
import CCurl
import Foundation

/// One request on ``CurlLoop``'s thread: its libcurl easy handle, the header list and error
/// buffer the handle points into, and the idle clock.
///
/// Ownership: created, used and destroyed on the loop thread only — libcurl's easy handles are
/// not thread-safe. The loop's table of running transfers holds the one strong reference;
/// libcurl's callbacks get an unretained pointer to it (`CURLOPT_*DATA`, `CURLOPT_PRIVATE`),
/// valid because the loop removes the handle from the multi handle before dropping the object.
/// The only thing other threads see is ``transfer``, which is `Sendable`.
final class CurlTransfer {
    let transfer: HTTPTransfer
    let easy: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let idleTimeout: Duration
    /// When a byte last moved, either way; the idle clock stops while ``isPaused``.
    private(set) var lastActivity = ContinuousClock.now
    private(set) var isPaused = false
    private var uploaded: curl_off_t = 0
    /// The streamed request body, read on the loop thread by libcurl's read callback.
    private var upload: (any HTTPUploadSource)?
    /// Headers of the response being received (a `1xx` answer's are dropped).
    private var headers: [String: String] = [:]
    private let method: String
    /// The pinned / self-signed check of the server's certificate, when the request asks for one.
    private var certificateCheck: ServerCertificateCheck?

    /// Makes the easy handle for `request`.
    /// - Throws: `.invalidParameter` when libcurl refuses an option (a malformed URL, say).
    init(_ request: HTTPClientRequest, transfer: HTTPTransfer) throws {
        guard let easy = curl_easy_init() else {
            throw CouchetteError(.io, "libcurl could not create a transfer (out of memory)")
        }
        self.easy = easy
        self.transfer = transfer
        idleTimeout = request.idleTimeout
        method = request.method
        errorBuffer = .allocate(capacity: Int(ccurl_error_size))
        errorBuffer.initialize(repeating: 0, count: Int(ccurl_error_size))
        try configure(request)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    // MARK: - Options

    private func configure(_ request: HTTPClientRequest) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_NOSIGNAL, 1)  // no SIGALRM for DNS timeouts: this is a threaded process
        try set(CURLOPT_ACCEPT_ENCODING, "")  // every encoding libcurl decodes (gzip, deflate, …)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_TCP_NODELAY, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout))
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context), CURLOPT_PRIVATE)
        try check(ccurl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlTransferWrite), CURLOPT_WRITEFUNCTION)
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context), CURLOPT_WRITEDATA)
        try check(ccurl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlTransferHeader), CURLOPT_HEADERFUNCTION)
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context), CURLOPT_HEADERDATA)
        try check(ccurl_easy_setopt_progress_callback(easy, CURLOPT_XFERINFOFUNCTION, curlTransferProgress), CURLOPT_XFERINFOFUNCTION)
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_XFERINFODATA, context), CURLOPT_XFERINFODATA)
        try set(CURLOPT_NOPROGRESS, 0)
        if let tls = request.tls { try configureTLS(tls) }

        if let upload = request.upload {
            self.upload = upload
            try set(CURLOPT_UPLOAD, 1)
            try check(
                ccurl_easy_setopt_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(clamping: upload.length)), CURLOPT_INFILESIZE_LARGE)
            try check(ccurl_easy_setopt_data_callback(easy, CURLOPT_READFUNCTION, curlTransferRead), CURLOPT_READFUNCTION)
            try check(ccurl_easy_setopt_pointer(easy, CURLOPT_READDATA, context), CURLOPT_READDATA)
            try check(ccurl_easy_setopt_seek_callback(easy, CURLOPT_SEEKFUNCTION, curlTransferSeek), CURLOPT_SEEKFUNCTION)
            try check(ccurl_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, context), CURLOPT_SEEKDATA)
            if request.method != "PUT" { try set(CURLOPT_CUSTOMREQUEST, request.method) }
        } else {
            try configureBody(request)
        }

        try configureHeaders(request)
    }

    private func configureBody(_ request: HTTPClientRequest) throws {
        switch (request.method, request.body) {
        case ("GET", nil): try set(CURLOPT_HTTPGET, 1)
        case ("HEAD", nil): try set(CURLOPT_NOBODY, 1)
        case (let method, let body?):
            try check(ccurl_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), CURLOPT_POSTFIELDSIZE_LARGE)
            // COPYPOSTFIELDS copies the bytes: the handle does not point into `body`.
            try body.withUnsafeBytes { bytes in
                if let pointer = bytes.baseAddress {
                    try check(
                        ccurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: pointer)),
                        CURLOPT_COPYPOSTFIELDS)
                } else {
                    try set(CURLOPT_COPYPOSTFIELDS, "")
                }
            }
            if method != "POST" { try set(CURLOPT_CUSTOMREQUEST, method) }
        case (let method, nil):
            try set(CURLOPT_CUSTOMREQUEST, method)
        }
    }

    private func configureHeaders(_ request: HTTPClientRequest) throws {
        // `Expect:` with no value stops libcurl from waiting for `100 Continue` before a body.
        var lines = request.headers.map { $0.value.isEmpty ? "\($0.name):" : "\($0.name): \($0.value)" }
        if !request.headers.contains(where: { $0.name.lowercased() == "expect" }) { lines.append("Expect:") }
        for line in lines {
            guard !line.contains("\r"), !line.contains("\n") else {
                throw CouchetteError(.invalidParameter, "an HTTP header may not contain a line break")
            }
            guard let appended = curl_slist_append(headerList, line) else {
                throw CouchetteError(.io, "libcurl could not add a header (out of memory)")
            }
            headerList = appended
        }
        try check(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), CURLOPT_HTTPHEADER)
    }

    private func configureTLS(_ tls: HTTPClientTLS) throws {
        // TLS 1.2 at most for these peer-to-peer modes: under TLS 1.3 a server refusing our client
        // certificate says so after the handshake, and its alert races with it closing the
        // connection (the request then fails as a plain broken pipe, retried forever); under
        // TLS 1.2 the refusal is part of the handshake and always reported.
        try set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2) | Int(CURL_SSLVERSION_MAX_TLSv1_2))
        if let roots = tls.trustedRoots {
            var pem = Data()
            for root in roots { pem += try OpenSSLCertificate(der: root).pem() }
            try pem.withUnsafeBytes {
                try check(ccurl_easy_setopt_blob_copy(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count), CURLOPT_CAINFO_BLOB)
            }
            try set(CURLOPT_SSL_VERIFYHOST, 2)
        }
        if tls.checksCertificateItself {
            let certificateCheck = ServerCertificateCheck(tls)
            self.certificateCheck = certificateCheck
            try check(
                ccurl_easy_setopt_ssl_ctx_callback(easy, CURLOPT_SSL_CTX_FUNCTION, curlInstallServerCertificateCheck),
                CURLOPT_SSL_CTX_FUNCTION)
            try check(
                ccurl_easy_setopt_pointer(easy, CURLOPT_SSL_CTX_DATA, Unmanaged.passUnretained(certificateCheck).toOpaque()),
                CURLOPT_SSL_CTX_DATA)
            try set(CURLOPT_SSL_VERIFYHOST, 0)  // the certificate itself is checked: a pinned one may name any host
            // A resumed TLS session skips the certificate: every handshake of this transfer shows it.
            try set(CURLOPT_SSL_SESSIONID_CACHE, 0)
            if let pinned = tls.pinnedCertificate {
                try set(CURLOPT_PINNEDPUBLICKEY, try ServerCertificateCheck.publicKeyPin(of: pinned))
            }
        }
        if let certificate = tls.clientCertificatePEM, let key = tls.clientKeyPEM {
            try set(CURLOPT_SSLCERTTYPE, "PEM")
            try certificate.withUnsafeBytes {
                try check(ccurl_easy_setopt_blob_copy(easy, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count), CURLOPT_SSLCERT_BLOB)
            }
            try set(CURLOPT_SSLKEYTYPE, "PEM")
            try key.withUnsafeBytes {
                try check(ccurl_easy_setopt_blob_copy(easy, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count), CURLOPT_SSLKEY_BLOB)
            }
        }
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(ccurl_easy_setopt_long(easy, option, value), option)
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        try check(ccurl_easy_setopt_string(easy, option, value), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code != CURLE_OK else { return }
        throw CouchetteError(
            .invalidParameter,
            "libcurl refused option \(option.rawValue) of a \(method) request: \(String(cString: curl_easy_strerror(code)))")
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow, seconds >= 0 else { return seconds < 0 ? 0 : Int.max / 2 }
        return Int(whole) + Int(attoseconds / 1_000_000_000_000_000)
    }

    // MARK: - Loop thread

    /// When the idle limit runs out, or nil while paused.
    var idleDeadline: ContinuousClock.Instant? {
        isPaused ? nil : lastActivity + idleTimeout
    }

    /// Continues a transfer paused because its reader's buffer was full.
    func resume() {
        guard isPaused else { return }
        isPaused = false
        lastActivity = .now
        // May call `received` at once with the bytes libcurl held back.
        curl_easy_pause(easy, ccurl_pause_continue)
    }

    /// Fails the transfer after `code` (the handle is already out of the multi handle).
    func complete(_ code: CURLcode) {
        if code == CURLE_OK {
            var status = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            transfer.receiveHead(HTTPTransfer.Head(status: status, headers: headers))
            transfer.finish(.success(()))
            return
        }
        let detail = String(cString: errorBuffer)
        let summary = String(cString: curl_easy_strerror(code))
        let message = detail.isEmpty || detail == summary ? summary : "\(summary) (\(detail))"
        if let reason = Self.certificateFailure(code, detail: detail, refusal: certificateCheck?.refusal) {
            transfer.finish(.failure(CouchetteError(.tls, "\(reason) [\(message)]")))
        } else {
            // No CURLOPT_TIMEOUT is set (the idle limit is ``expire()``), so a timeout is the connect one.
            let neverConnected = [CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_OPERATION_TIMEDOUT].contains(code)
            transfer.finish(.failure(neverConnected ? HTTPConnectError(message: message) : CouchetteError(.io, message)))
        }
    }

    /// The reason a failed transfer is a certificate failure (never worth retrying), or nil for
    /// network trouble. A server that refuses our client certificate answers with a TLS alert,
    /// which TLS 1.3 delivers after the handshake: on the first read, not while connecting.
    static func certificateFailure(_ code: CURLcode, detail: String, refusal: String?) -> String? {
        if let refusal { return refusal }
        let text = detail.lowercased()
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION:
            return text.contains("expired") ? "the server's certificate has expired" : "untrusted: the server's certificate is not trusted"
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return "wrong pin: the server's public key is not the pinned certificate's"
        case CURLE_SSL_CERTPROBLEM:
            return "the client certificate could not be used"
        case CURLE_SSL_CONNECT_ERROR, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            if text.contains("alert") && (text.contains("certificate") || text.contains("unknown ca")) {
                return "client certificate refused by the server"
            }
            // What a server requiring a client certificate answers a client that sent none.
            if text.contains("alert handshake failure") {
                return "client certificate refused by the server (none presented, or no cipher in common)"
            }
            if text.contains("wrong version number") || text.contains("packet length too long") {
                return "the server does not speak TLS on this port"
            }
            return nil
        default:
            return nil
        }
    }

    /// Fails the transfer after `idleTimeout` without a byte.
    ///
    /// A connection still being made (TCP or the TLS handshake) when the idle limit runs out is
    /// reported as never connected, as libcurl's connect timeout would have: on a busy machine the
    /// idle deadline can come round first even when it is the longer of the two, and a server that
    /// never completes the connection is unreachable (callers fail over), not silent.
    func expire() {
        if isConnected {
            transfer.finish(.failure(CouchetteError(.io, "no data sent or received for \(idleTimeout)")))
        } else {
            transfer.finish(.failure(HTTPConnectError(message: "Timeout was reached (the connection was not made within \(idleTimeout))")))
        }
    }

    /// Whether libcurl got as far as sending the request: connected, TLS handshake done, on a new or
    /// a reused connection (its pre-transfer time is set then, and stays zero until then).
    private var isConnected: Bool {
        var microseconds: curl_off_t = 0
        return ccurl_easy_getinfo_offset(easy, CURLINFO_PRETRANSFER_TIME_T, &microseconds) == CURLE_OK && microseconds > 0
    }

    // MARK: - libcurl callbacks

    fileprivate func received(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch transfer.receive(bytes) {
        case .taken:
            lastActivity = .now
            return bytes.count
        case .full:
            isPaused = true
            return Int(bitPattern: UInt(ccurl_writefunc_pause))
        case .refused:
            return 0  // libcurl aborts the transfer (CURLE_WRITE_ERROR)
        }
    }

    fileprivate func receivedHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        lastActivity = .now
        var end = bytes.count
        while end > 0, bytes[end - 1] == 10 || bytes[end - 1] == 13 { end -= 1 }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = [:]  // a new response: after `100 Continue`, or the first one
        } else if line.isEmpty {
            var status = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            if status >= 200 { transfer.receiveHead(HTTPTransfer.Head(status: status, headers: headers)) }
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let earlier = headers[name] {
                headers[name] = earlier + (name == "set-cookie" ? "\n" : ", ") + value
            } else {
                headers[name] = value
            }
        }
        return transfer.hasEnded ? 0 : bytes.count
    }

    /// The next bytes of the streamed body; libcurl's abort code on a failure or cancellation.
    fileprivate func sending(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !transfer.hasEnded, let upload, let count = upload.read(into: buffer) else { return ccurl_readfunc_abort }
        if count > 0 { lastActivity = .now }
        return count
    }

    /// libcurl rewinds a body only to its start (to send it again on a new connection).
    fileprivate func rewind(to offset: curl_off_t, origin: Int32) -> Int32 {
        guard offset == 0, origin == SEEK_SET, let upload, upload.rewind() else { return ccurl_seekfunc_cantseek }
        return ccurl_seekfunc_ok
    }

    fileprivate func progressed(uploaded now: curl_off_t) -> Int32 {
        if now > uploaded {
            uploaded = now
            lastActivity = .now
        }
        return transfer.hasEnded ? 1 : 0  // non-zero aborts a cancelled transfer at once
    }
}

// C callbacks: `context` is the unretained ``CurlTransfer`` set as the handle's *DATA option.

private func curlTransferRead(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?)
    -> Int
{
    guard let context else { return ccurl_readfunc_abort }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.sending(UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private func curlTransferSeek(_ context: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard let context else { return ccurl_seekfunc_cantseek }
    return Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().rewind(to: offset, origin: origin)
}

private func curlTransferWrite(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?)
    -> Int
{
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.received(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

private func curlTransferHeader(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?)
    -> Int
{
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receivedHeader(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

private func curlTransferProgress(
    _ context: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloadNow: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploadNow: curl_off_t
) -> Int32 {
    guard let context else { return 1 }
    return Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().progressed(uploaded: uploadNow)
}
