# A small FastAPI app whose generated OpenAPI 3.1 document is the fixture
# host/sdk/openapi/testdata/fastapi31.json (generated with fastapi 0.115.14).
from enum import Enum
from typing import Optional, Union
from fastapi import FastAPI, Query, Header, Path
from pydantic import BaseModel

app = FastAPI(title="Todo", version="0.1.0")

class Priority(str, Enum):
    low = "low"
    high = "high"

class Todo(BaseModel):
    id: int
    title: str
    done: bool = False
    priority: Priority = Priority.low
    note: Optional[str] = None
    tags: list[str] = []
    meta: dict[str, int] = {}
    parent: Optional["Todo"] = None

class NewTodo(BaseModel):
    title: str
    priority: Priority = Priority.low
    note: Union[str, None] = None

@app.get("/todos", response_model=list[Todo])
def list_todos(limit: int = Query(10, le=100), done: Optional[bool] = None, x_trace: Optional[str] = Header(None)):
    return []

@app.post("/todos", response_model=Todo, status_code=201)
def create_todo(todo: NewTodo):
    return Todo(id=1, title=todo.title)

@app.get("/todos/{todo_id}", response_model=Todo)
def get_todo(todo_id: int = Path(..., ge=1)):
    return Todo(id=todo_id, title="x")

@app.delete("/todos/{todo_id}", status_code=204)
def delete_todo(todo_id: int):
    return None
