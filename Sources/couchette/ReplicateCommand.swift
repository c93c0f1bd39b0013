import Couchette
import Foundation

/// `couchette replicate DB URL [--push|--pull] [--continuous] [--collection C] [--user U --password P [--session]]`
enum ReplicateCommand {
    static let command = Command(
        name: "replicate", arguments: [.database, .init("URL", "the remote database, e.g. http://127.0.0.1:5984/todo")],
        summary: "Replicate a collection with a CouchDB-protocol server (couchette serve, CouchDB, PouchDB)",
        discussion: """
            Pushes and pulls (or only --push / --pull) the collection, showing documents, rate
            and status on standard error, then prints how many documents it pushed, pulled and
            skipped (each skipped one with its reason: documents with attachments, refused by
            the server) and the time. A one-shot run exits 0 once both sides are in step, 1 when
            a document was skipped or with the error otherwise (an unreachable server is retried
            3 times first). With --continuous it keeps replicating new changes until Ctrl-C
            (SIGINT) or SIGTERM. The collection (--collection, default the default collection)
            replicates with the database the URL names, whatever its local name. The database
            and the collection are created when missing. --user/--password are sent with every
            request (HTTP Basic), or with --session only once, to log in (POST /_session): the
            server's session cookie is sent from then on.

            Example: couchette replicate todo http://127.0.0.1:5984/todo --pull
            """,
        options: [
            .init(name: "push", valueName: nil, help: "only send local changes"),
            .init(name: "pull", valueName: nil, help: "only receive remote changes"),
            .init(name: "continuous", valueName: nil, help: "keep replicating until interrupted"),
            .collection,
            .init(name: "user", valueName: "U", help: "HTTP Basic user name"),
            .init(name: "password", valueName: "P", help: "the password for --user"),
            .init(name: "session", valueName: nil, help: "log in once with --user/--password (POST /_session) and send the session cookie"),
            .init(
                name: "pin", valueName: "SHA256",
                help: "accept only the server certificate with this SHA-256 (as couchette serve prints it)"),
            .init(name: "cacert", valueName: "FILE", help: "trust the PEM certificates in FILE instead of the system's"),
            .init(name: "client-cert", valueName: "FILE", help: "present the PEM certificate in FILE (with --client-key)"),
            .init(name: "client-key", valueName: "FILE", help: "the PEM private key for --client-cert"),
        ]
    ) { arguments in
        let push = arguments.flags.contains("push"), pull = arguments.flags.contains("pull")
        guard !(push && pull) else { throw UsageError("--push and --pull exclude each other (give neither for both)") }
        guard let url = URL(string: arguments.positional[1]), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw UsageError("'\(arguments.positional[1])' is not an http(s) URL")
        }
        let credentials = try ServeCommand.credentials(arguments)
        if arguments.flags.contains("session") && credentials == nil { throw UsageError("--session needs --user and --password") }
        let collectionName = try arguments.collectionName
        try await withOpenDatabase(arguments.positional[0], create: true) { database in
            var config = ReplicatorConfiguration(target: URLEndpoint(url: url))
            config.addCollection(try await collectionName.created(in: database))
            config.replicatorType = push ? .push : pull ? .pull : .pushAndPull
            config.continuous = arguments.flags.contains("continuous")
            if !config.continuous {
                config.maxAttempts = 3
                config.maxAttemptWaitTime = 5
            }
            try configureTLS(&config, arguments)
            if let (user, password) = credentials {
                if arguments.flags.contains("session") {
                    config.authenticator = try await SessionAuthenticator.logIn(to: config, username: user, password: password)
                    Terminal.writeError("Logged in as \(user) (session cookie)\n")
                } else {
                    config.authenticator = BasicAuthenticator(username: user, password: password)
                }
            }
            try await run(try Replicator(config: config), continuous: config.continuous)
        }
    }

    /// `--pin`, `--cacert`, `--client-cert` and `--client-key`.
    static func configureTLS(_ config: inout ReplicatorConfiguration, _ arguments: ParsedArguments) throws {
        if let pin = arguments.options["pin"] {
            let hex = pin.lowercased().filter { $0 != ":" }
            guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else {
                throw UsageError("--pin takes a SHA-256 fingerprint (64 hex digits), got '\(pin)'")
            }
            config.pinnedServerCertificateSHA256 = hex
        }
        if let file = arguments.options["cacert"] {
            let pem = try readFile(file, "--cacert")
            config.trustedRootCertificates = try TLSIdentity.certificates(pem: pem)
        }
        switch (arguments.options["client-cert"], arguments.options["client-key"]) {
        case (nil, nil): break
        case (let certificate?, let key?):
            if arguments.options["user"] != nil { throw UsageError("--client-cert and --user exclude each other") }
            let identity = try TLSIdentity.identity(
                certificatePEM: try readFile(certificate, "--client-cert"),
                privateKeyPEM: try readFile(key, "--client-key"))
            config.authenticator = ClientCertificateAuthenticator(identity: identity)
        default: throw UsageError("--client-cert and --client-key go together")
        }
    }

    static func readFile(_ path: String, _ option: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("\(option): cannot read '\(path)'") }
        return data
    }

    /// Runs `replicator`, drawing its status, until a one-shot run stops or an interrupt.
    static func run(_ replicator: Replicator, continuous: Bool) async throws {
        let interrupted = InterruptSignals()
        defer { interrupted.stop() }
        let changes = replicator.changes()
        let documents = replicator.documentReplications()
        let signals = interrupted.received
        let stopper = Task {
            for await _ in signals {
                await replicator.stop()
                return true
            }
            return false
        }
        defer { stopper.cancel() }
        let line = StatusLine()
        await replicator.start()
        var started = false
        var final: Replicator.Status?
        for await change in changes {
            let status = change.status
            if status.activity != .stopped { started = true }
            if started { line.show(status) }
            if started && status.activity == .stopped {
                final = status
                break
            }
        }
        line.finish()
        interrupted.stop()
        let wasInterrupted = await stopper.value
        guard let final else { throw ToolError("the replicator ended without a status") }
        let tally = await Tally(draining: documents)
        if let error = final.error { throw error }
        print(tally.summary(seconds: line.elapsedSeconds))
        for skipped in tally.skipped { print("  skipped \(skipped)") }
        if wasInterrupted && !continuous { throw ToolError("interrupted before the replication completed") }
        if !tally.skipped.isEmpty {
            throw ToolError("\(tally.skipped.count) document\(tally.skipped.count == 1 ? " was" : "s were") skipped (listed above)")
        }
    }

    /// What the replicator did, from its document events: revisions it wrote on either side
    /// (echoes of its own writes are never written, so never counted) and documents it skipped.
    struct Tally {
        var pushed = 0
        var pulled = 0
        /// "'id' (pushing): reason" for each document that failed.
        var skipped: [String] = []

        /// Reads every event already published. The replicator publishes a batch's documents
        /// before its status can say it stopped, so once stopped they are all queued: each comes
        /// at once, and a wait of 200 ms with nothing more ends the reading.
        init(draining documents: ChangeStream<DocumentReplication>) async {
            let iterator = documents.makeAsyncIterator()
            while let event = await Tally.next(iterator) {
                for document in event.documents {
                    if let error = document.error {
                        skipped.append("'\(document.id)' (\(event.isPush ? "pushing" : "pulling")): \(error)")
                    } else if event.isPush {
                        pushed += 1
                    } else {
                        pulled += 1
                    }
                }
            }
        }

        private static func next(_ iterator: ChangeStream<DocumentReplication>.Iterator) async -> DocumentReplication? {
            await withTaskGroup(of: DocumentReplication?.self) { group in
                group.addTask {
                    var copy = iterator
                    return await copy.next()
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(200))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }

        /// "Pushed 2 documents, pulled 0, skipped 1 in 0.042 s."
        func summary(seconds: Double) -> String {
            "Pushed \(pushed) document\(pushed == 1 ? "" : "s"), pulled \(pulled), skipped \(skipped.count) in "
                + String(format: "%.3f s.", seconds)
        }
    }

    /// One line on standard error: redrawn in place on a terminal, else printed on each activity change.
    final class StatusLine {
        private let clock = ContinuousClock()
        private let start: ContinuousClock.Instant
        private let isTerminal = Terminal.standardErrorIsTerminal
        private var lastActivity: Replicator.ActivityLevel?

        init() { start = clock.now }

        var elapsedSeconds: Double {
            let (whole, attoseconds) = (clock.now - start).components
            return Double(whole) + Double(attoseconds) / 1e18
        }

        func show(_ status: Replicator.Status) {
            let seconds = elapsedSeconds
            let rate = seconds > 0 ? Int(Double(status.progress.completed) / seconds) : 0
            let text = "\(status.progress.completed)/\(status.progress.total) documents  \(rate) docs/s  \(status.activity)"
            if isTerminal {
                Terminal.writeError("\r\(text)\u{1B}[K")
            } else if status.activity != lastActivity {
                Terminal.writeError(text + "\n")
            }
            lastActivity = status.activity
        }

        func finish() {
            if isTerminal { Terminal.writeError("\r\u{1B}[K") }
        }
    }
}
