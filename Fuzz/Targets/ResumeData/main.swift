// Download resume data (the `.resume` file beside a partial download). Properties: decode → serialize →
// decode is the identity; what a decoded record derives (bytes on disk, next offsets) never traps.
import FuzzSupport
import Clients

fuzzMain { data in
    guard let resume = try? ResumeData(serialized: data) else { return }  // refused: a fresh download, not a finding
    let again = try? ResumeData(serialized: resume.serialized())  // nil is a finding: checked next
    fuzzCheck(again == resume, "resume data changed on decode → serialize → decode")
    _ = resume.bytesOnDisk
    _ = resume.isResumable
    for segment in resume.segments {
        _ = segment.isComplete
        _ = segment.nextOffset
    }
}
