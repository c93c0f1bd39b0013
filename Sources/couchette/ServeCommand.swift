import Couchette
import Foundation

/// `couchette serve DB [--port N] [--host ADDR] [--collections A,B] [--user U --password P] [--read-only] [--no-tls | --cert FILE --key FILE]`
enum ServeCommand {
    static let command = Command(
        name: "serve", arguments: [.database],
        summary: "Serve collections over the CouchDB replication API until interrupted",
        discussion: """
            Runs a URLEndpointListener: other Couchette replicators (couchette replicate),
            CouchDB and PouchDB can push to and pull from the database at the printed URLs, one
            per collection: /DB for the default collection, /DB.SCOPE.NAME for the others.
            Listens on 127.0.0.1 unless --host says otherwise (0.0.0.0: every interface). The
            database and the named collections are created when missing. Ctrl-C (SIGINT) or
            SIGTERM closes every connection and exits.

            Serves HTTPS by default, with a self-signed certificate made at start (or --cert and
            --key), and prints its SHA-256 fingerprint: give it to couchette replicate --pin.

            Example: couchette serve todo --port 5984 --user alice --password secret
            """,
        options: [
            .init(name: "port", valueName: "N", help: "TCP port (default 0: any free port)"),
            .init(name: "host", valueName: "ADDR", help: "address to listen on (default 127.0.0.1)"),
            .init(name: "collections", valueName: "A,B", help: "collections to serve, as SCOPE.NAME or NAME (default _default)"),
            .init(name: "user", valueName: "U", help: "require HTTP Basic authentication as U"),
            .init(name: "password", valueName: "P", help: "the password for --user"),
            .init(name: "read-only", valueName: nil, help: "refuse document writes (pulling still works)"),
            .init(name: "no-tls", valueName: nil, help: "serve plain HTTP instead of HTTPS"),
            .init(name: "cert", valueName: "FILE", help: "serve HTTPS with the PEM certificate (chain) in FILE (with --key)"),
            .init(name: "key", valueName: "FILE", help: "the PEM private key for --cert"),
        ]
    ) { arguments in
        var port: UInt16 = 0
        if let text = arguments.options["port"] {
            guard let number = UInt16(text) else { throw UsageError("--port must be a number from 0 to 65535, got '\(text)'") }
            port = number
        }
        let names =
            try (arguments.options["collections"]?.split(separator: ",").map { try CollectionName(String($0)) })
            ?? [CollectionName.defaultCollection]
        let credentials = try ServeCommand.credentials(arguments)
        try await withOpenDatabase(arguments.positional[0], create: true) { database in
            var collections: [Collection] = []
            for name in names { collections.append(try await name.created(in: database)) }
            var config = URLEndpointListenerConfiguration(collections: collections)
            config.port = port
            config.networkInterface = arguments.options["host"]
            config.readOnly = arguments.flags.contains("read-only")
            config.disableTLS = arguments.flags.contains("no-tls")
            switch (arguments.options["cert"], arguments.options["key"]) {
            case (nil, nil): break
            case (let certificate?, let key?):
                guard !config.disableTLS else { throw UsageError("--cert and --no-tls exclude each other") }
                config.tlsIdentity = try TLSIdentity.identity(
                    certificatePEM: try ReplicateCommand.readFile(certificate, "--cert"),
                    privateKeyPEM: try ReplicateCommand.readFile(key, "--key"))
            default: throw UsageError("--cert and --key go together")
            }
            if let (user, password) = credentials {
                config.authenticator = ListenerPasswordAuthenticator { $0 == user && $1 == password }
            }
            let interrupted = InterruptSignals()
            defer { interrupted.stop() }
            let listener = URLEndpointListener(config: config)
            try await listener.start()
            print("Serving \(database.name) on port \(listener.port ?? 0)\(config.readOnly ? " (read-only)" : ""):")
            for url in listener.urls { print("  \(url.absoluteString)") }
            if let identity = listener.tlsIdentity {
                print("TLS certificate SHA-256: \(identity.sha256Fingerprint)")
            }
            Terminal.flushStandardOutput()
            for await _ in interrupted.received { break }
            await listener.stop()
            print("Stopped.")
        }
    }

    /// `--user` and `--password`, which come together or not at all.
    static func credentials(_ arguments: ParsedArguments) throws -> (String, String)? {
        switch (arguments.options["user"], arguments.options["password"]) {
        case (nil, nil): return nil
        case (let user?, let password?): return (user, password)
        default: throw UsageError("--user and --password go together")
        }
    }
}
