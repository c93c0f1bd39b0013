import Foundation
import Testing
@testable import Couchette

/// A fresh folder for one test's databases, removed when the test ends.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
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
func withDatabase<R>(_ name: String = "test", _ body: (Database, TemporaryDirectory) async throws -> R) async throws -> R {
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
func expectCouchetteError(_ code: CouchetteError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                          _ body: () async throws -> Void) async -> String? {
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
func eventually(timeout: Duration = .seconds(5), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
