import Couchette
import Foundation

// The libFuzzer harness over Couchette's readers of outside input (see `FuzzTarget`).
//
// `scripts/fuzz` builds it with `-sanitize=fuzzer,address -DCOUCHETTE_FUZZ`: libFuzzer then
// supplies `main` and calls the two exported functions below; the target comes from the
// environment (`COUCHETTE_FUZZ_TARGET`). The plain build (part of `swift build`) replays inputs
// instead, without libFuzzer: `couchette-fuzz TARGET FILE...`, to reproduce a crash under a
// debugger or print what an input does.

/// The harness of this process, made once by `LLVMFuzzerInitialize` (or by the replay main).
nonisolated(unsafe) private var harness: FuzzHarness?
// `nonisolated(unsafe)`: written once before the first input, then only read, and libFuzzer
// calls `LLVMFuzzerTestOneInput` from one thread.

/// The folder of the harness's database, removed at exit (same reasoning as `harness`).
nonisolated(unsafe) private var databaseFolder = ""

/// Opens the target's database in a fresh folder (on tmpfs when there is one: commits sync).
private func makeHarness(_ name: String) -> FuzzHarness {
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("couchette-fuzz: unknown target '\(name)' (\(names))\n".utf8))
        exit(2)
    }
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let directory = "\(base)/couchette-fuzz-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let made = try blocking { try await FuzzHarness(target: target, directory: directory) }
        databaseFolder = directory
        atexit { try? FileManager.default.removeItem(atPath: databaseFolder) }
        return made
    } catch {
        FileHandle.standardError.write(Data("couchette-fuzz: cannot open the database in \(directory): \(error)\n".utf8))
        exit(2)
    }
}

/// Writes the target's seeds (see `FuzzHarness.seeds`) into the corpus folder `corpus`.
private func writeSeeds(_ name: String, fixtures: String, into corpus: String) {
    guard let target = FuzzTarget(rawValue: name) else { _ = makeHarness(name); return }
    let seeds = FuzzHarness.seeds(for: target, fixtures: fixtures)
    try? FileManager.default.createDirectory(atPath: corpus, withIntermediateDirectories: true)
    for (index, seed) in seeds.enumerated() {
        _ = FileManager.default.createFile(atPath: "\(corpus)/seed-\(index)", contents: Data(seed))
    }
    print("couchette-fuzz: \(seeds.count) seeds for \(name) written to \(corpus)")
}

/// Runs `work` to the end on the calling (libFuzzer's) thread, which is not one of the
/// concurrency pool's, so blocking it cannot starve the tasks `work` waits for.
private func blocking<Result: Sendable>(_ work: @escaping @Sendable () async throws -> Result) throws -> Result {
    let done = DispatchSemaphore(value: 0)
    let outcome = Outcome<Result>()
    Task {
        do { outcome.result = .success(try await work()) } catch { outcome.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try outcome.result!.get()
}

/// What the task of ``blocking(_:)`` hands back.
// @unchecked: `result` is written by the task before it signals the semaphore and read only
// after the waiting thread has returned from `wait()`, which orders the two accesses.
private final class Outcome<Value: Sendable>: @unchecked Sendable {
    var result: Swift.Result<Value, any Error>?
}

private func runBlocking(_ harness: FuzzHarness, _ input: [UInt8]) {
    _ = try? blocking { await harness.run(input) }
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    let name = environment["COUCHETTE_FUZZ_TARGET"] ?? ""
    if let corpus = environment["COUCHETTE_FUZZ_WRITE_SEEDS"], let fixtures = environment["COUCHETTE_FUZZ_FIXTURES"] {
        writeSeeds(name, fixtures: fixtures, into: corpus)
        exit(0)
    }
    harness = makeHarness(name)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let harness else { return 0 }
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    runBlocking(harness, input)
    return 0
}

#if !COUCHETTE_FUZZ
@main
enum FuzzReplay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first else {
            print("usage: couchette-fuzz TARGET FILE...   (replays inputs; scripts/fuzz runs libFuzzer)")
            exit(2)
        }
        let harness = makeHarness(name)
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(1)
            }
            runBlocking(harness, Array(data))
            print("ok \(path)")
        }
    }
}
#endif
