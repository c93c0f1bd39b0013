import Foundation
import Testing

/// `couchette serve DB` in a child process, started and waited for until it printed its URL
/// (retried for a while when the port is not free yet, as after a kill).
struct ServeProcess {
    let process: Process
    /// `http(s)://127.0.0.1:PORT/NAME`.
    let url: String
    let port: UInt16
    /// The certificate's SHA-256 fingerprint to pass as `--pin` (nil with `tls: false`).
    let pin: String?
    private let outputPath: String

    /// Everything the server printed so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// - Parameters:
    ///   - port: 0 for a free one.
    ///   - tls: HTTPS with the self-signed certificate the server makes (it prints its pin),
    ///     else `--no-tls`.
    ///   - arguments: more options for `serve`, such as `--user ann --password pw`.
    init(_ path: String, port: UInt16 = 0, tls: Bool = false, arguments: [String] = []) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        let scheme = tls ? "https://" : "http://", pinPrefix = "TLS certificate SHA-256: "
        while true {
            let outputPath = path + ".serve-\(UUID().uuidString).out"
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CrashTests.toolPath)
            process.arguments = ["serve", path, "--port", String(port)] + (tls ? [] : ["--no-tls"]) + arguments
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            process.standardError = FileHandle.nullDevice
            try await startProcess(process)
            let text = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
            // The pin is printed after the URL: wait for the last line needed.
            let last = tls ? pinPrefix : scheme
            while process.isRunning, !text().contains(last), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let lines = text().split(separator: "\n")
            if let line = lines.first(where: { $0.contains(scheme) }),
                case let url = line.trimmingCharacters(in: .whitespaces), let bound = URL(string: url)?.port,
                let port = UInt16(exactly: bound)
            {
                self.process = process
                self.url = url
                self.port = port
                pin = lines.first { $0.hasPrefix(pinPrefix) }.map { String($0.dropFirst(pinPrefix.count)) }
                self.outputPath = outputPath
                return
            }
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            try #require(ContinuousClock.now < deadline, "couchette serve did not start: \(text())")
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Ends the server at once if it still runs (also for `defer`).
    func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// Sends SIGINT and waits for the server to exit.
    func interrupt() async {
        Glibc.kill(process.processIdentifier, SIGINT)
        await waitForExit(process)
    }
}
