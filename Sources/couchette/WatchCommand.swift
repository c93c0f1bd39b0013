import Couchette
import Foundation

/// `couchette watch DB 'SQL++' [--param NAME=JSON ...] [--collection C]`
enum WatchCommand {
    static let command = Command(
        name: "watch", arguments: [.database, .init("SQL++", "one SELECT statement (quote it for the shell)")],
        summary: "Print a query's results, then again each time they change, until interrupted",
        discussion: """
            A live query: the result table is printed at once, then re-printed after every commit
            that changes the results — commits of this or any other process on the same database
            (other processes' commits are noticed within about 20 ms). Commits that leave the
            results equal print nothing. With --collection, each commit to that collection also
            prints one line naming the changed documents. Ctrl-C (SIGINT) or SIGTERM ends it.

            Example: couchette watch todo 'SELECT title FROM _default.tasks WHERE done = false'
            """,
        options: [
            .init(name: "param", valueName: "NAME=JSON", help: "set the query parameter $NAME", isRepeatable: true),
            .collection,
        ]
    ) { arguments in
        let parameters = try QueryCommand.parameters(arguments.repeated["param"] ?? [])
        let collectionName = arguments.options["collection"] == nil ? nil : try arguments.collectionName
        try await withOpenDatabase(arguments.positional[0]) { database in
            let query = try database.createQuery(arguments.positional[1])
            query.parameters = parameters
            let collection = try collectionName.map { try $0.existing(in: database) }
            try await watch(query, collection: collection)
        }
    }

    /// Prints every change of `query` (and of `collection`) until SIGINT or SIGTERM.
    static func watch(_ query: Query, collection: Collection?) async throws {
        let interrupted = InterruptSignals()
        defer { interrupted.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var first = true
                for await change in query.changes() {
                    if let error = change.error { throw error }
                    guard let results = change.results else { continue }
                    if !first { print("") }
                    first = false
                    print(Terminal.dim("results at \(timestamp())", Terminal.colorsOnStandardOutput))
                    ResultPrinter.printTable(results, columns: query.columnNames, elapsed: nil)
                    Terminal.flushStandardOutput()
                }
            }
            if let collection {
                group.addTask {
                    for await change in collection.changes() {
                        print("changed in \(collection.fullName): \(change.documentIDs.joined(separator: ", "))")
                        Terminal.flushStandardOutput()
                    }
                }
            }
            let signals = interrupted.received
            group.addTask { for await _ in signals { return } }
            // The first task to end (an interrupt, an error, the database closing) ends the others.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: Date())
    }
}

/// SIGINT and SIGTERM, turned from "end the process" into an awaitable event.
final class InterruptSignals {
    private let sources: [any DispatchSourceSignal]
    /// Yields once per signal received.
    let received: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (received, continuation) = AsyncStream.makeStream(of: Void.self)
        let continuation = continuation
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
    }

    func stop() {
        for source in sources { source.cancel() }
        continuation.finish()
    }
}
