//! The files API of [`ClaudeClient`] (files beta): upload, list with the files API's own paging, metadata,
//! download, delete.

use managed_agents_core::Error;
use managed_agents_core::http::{Bytes, Method, Replay, read_body};
use serde_json::Value;

use crate::wire::client::{Beta, Body, ClaudeClient, LIST_PAGE_SIZE, MAX_LIST_PAGES, encode, query_string};
use crate::wire::excerpt;

impl ClaudeClient {
    /// `POST /v1/files`: uploads `bytes` as `filename` (multipart; files beta). Not repeated unless unprocessed.
    pub async fn upload_file(&self, filename: &str, bytes: &[u8]) -> Result<Value, Error> {
        let boundary = format!("managed-agents-{:016x}", fastrand::u64(..));
        let safe_name: String = filename.chars().filter(|c| *c != '"' && *c != '\r' && *c != '\n').collect();
        let mut body = Vec::with_capacity(bytes.len() + 512);
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nuser_data\r\n").as_bytes(),
        );
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{safe_name}\"\r\nContent-Type: {}\r\n\r\n",
                content_type(filename)
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let body = Body::Multipart { boundary, bytes: Bytes::from(body) };
        self.json(Method::POST, "/v1/files", body, Beta::Files, Replay::IfUnprocessed).await
    }

    /// `GET /v1/files`: one page, optionally only a session's (`scope_id`). See [`ClaudeClient::list_all_files`].
    pub async fn list_files(&self, scope_id: Option<&str>) -> Result<Value, Error> {
        let query: Vec<(&str, String)> = scope_id.map(|id| ("scope_id", id.to_string())).into_iter().collect();
        self.list_files_page(&query).await
    }

    /// `GET /v1/files` with query parameters (`limit`, `after_id`, `before_id`, `scope_id`): one page.
    pub async fn list_files_page(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.json(Method::GET, &format!("/v1/files{}", query_string(query)), Body::None, Beta::Both, Replay::Safe).await
    }

    /// Every file (optionally only a session's), following the files API's own paging: `after_id` = the
    /// page's `last_id` while `has_more` is true (stopping at a `last_id` already followed).
    pub async fn list_all_files(&self, scope_id: Option<&str>) -> Result<Vec<Value>, Error> {
        let mut files = Vec::new();
        let mut after: Option<String> = None;
        let mut followed = std::collections::HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let mut query = vec![("limit", LIST_PAGE_SIZE.to_string())];
            if let Some(scope) = scope_id {
                query.push(("scope_id", scope.to_string()));
            }
            if let Some(after) = &after {
                query.push(("after_id", after.clone()));
            }
            let page = self.list_files_page(&query).await?;
            let Some(data) = page.get("data").and_then(Value::as_array) else {
                return Err(Error::malformed("file page", "no `data` array", excerpt(page.to_string().as_bytes())));
            };
            files.extend(data.iter().cloned());
            let more = page.get("has_more").and_then(Value::as_bool).unwrap_or(false);
            let last = page
                .get("last_id")
                .and_then(Value::as_str)
                .or_else(|| data.last().and_then(|f| f.get("id")).and_then(Value::as_str))
                .filter(|id| !id.is_empty());
            match last {
                Some(last) if more && followed.insert(last.to_string()) => after = Some(last.to_string()),
                _ => return Ok(files),
            }
        }
        Err(Error::malformed("file page", format!("more than {MAX_LIST_PAGES} pages"), String::new()))
    }

    /// `GET /v1/files/{id}`: a file's metadata (`filename`, `size_bytes`, `downloadable`, `scope` …).
    pub async fn get_file(&self, file_id: &str) -> Result<Value, Error> {
        self.json(Method::GET, &format!("/v1/files/{}", encode(file_id)), Body::None, Beta::Both, Replay::Safe).await
    }

    /// `GET /v1/files/{id}/content`: the raw bytes.
    pub async fn download_file(&self, file_id: &str) -> Result<Bytes, Error> {
        let path = format!("/v1/files/{}/content", encode(file_id));
        let response = self.send(Method::GET, &path, Body::None, Beta::Both, Replay::Always).await?;
        read_body(response.into_body(), 512 << 20, self.config().http.request_timeout).await
    }

    /// `DELETE /v1/files/{id}`.
    pub async fn delete_file(&self, file_id: &str) -> Result<Value, Error> {
        self.json(Method::DELETE, &format!("/v1/files/{}", encode(file_id)), Body::None, Beta::Both, Replay::Always)
            .await
    }
}

/// The part content type the upload declares, from the file's extension.
pub(crate) fn content_type(filename: &str) -> &'static str {
    let extension = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "txt" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "md" => "text/markdown",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_follow_extensions() {
        assert_eq!(content_type("report.PDF"), "application/pdf");
        assert_eq!(content_type("data.bin"), "application/octet-stream");
    }
}
