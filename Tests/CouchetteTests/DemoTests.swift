import Foundation
import Testing

@testable import Couchette

/// `couchette demo` is the README's first command: it must run to the end and show each step.
@Suite struct DemoTests {
    @Test func theDemoRunsEveryStepAndCleansUp() async throws {
        let result = try await CLI.run(["demo"])
        #expect(result.status == 0, "\(result.stderr)")
        for step in [
            "Created collection _default.tasks", "Saved 4 tasks in one batch",
            "refused (conflict)", "Merged with a conflict handler", "Deleted task-2",
            "Purged task-3", "task-4 expired after 0.2 s: gone",
            "Live query (after adding task-5): Book the trip", "Index byTitle: INDEX SCAN",
            "Replicated to a second database: 2 task(s) there", "Reopened the database", "Done; removed",
        ] {
            #expect(result.stdout.contains(step), "missing '\(step)' in:\n\(result.stdout)")
        }
        let folder = result.stdout.split(separator: "\n").last.map { String($0.split(separator: " ").last ?? "") } ?? ""
        #expect(!folder.isEmpty && !FileManager.default.fileExists(atPath: folder))
    }
}
