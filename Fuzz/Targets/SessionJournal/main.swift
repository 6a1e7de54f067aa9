// Transfer-session journal replay: the input is written as `<dir>/fuzz.wsload-session` and the session
// opened on it (replay, torn-tail truncation, resume data inside checkpoints). Opening may refuse the
// journal; it must not trap. The session is released (closing the journal) before the next input.
import FuzzSupport
import Clients
import Runtime
#if canImport(Glibc)
import Glibc
#endif

let directory: String = {
    var template = Array("/tmp/wsload-fuzz-session-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    return String(cString: made)
}()
let path = directory + "/fuzz.wsload-session"
let loop: EventLoop = {
    do { return try EventLoop() } catch { fatalError("no event loop: \(error)") }
}()

fuzzMain { data in
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard descriptor >= 0 else { fatalError("cannot write \(path)") }
    var written = 0
    while written < data.count {
        let count = data[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { fatalError("cannot write \(path)") }
        written += count
    }
    close(descriptor)
    _ = try? TransferSession(identifier: "fuzz", directory: directory, loop: loop)  // a refused journal is a valid outcome
}
